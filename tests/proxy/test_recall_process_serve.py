"""A real `tap serve` in front of a fake Anthropic upstream: recall answered by its recall process,
and a memory forgotten through the admin API is in no request sent after the forget returned."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp
import pytest

from testkit.serve_process import ServeProcess, admin
from testkit.upstreams import FakeAnthropic
from testkit.waits import until

pytestmark = pytest.mark.slow


async def ask(session: aiohttp.ClientSession, server: ServeProcess, opening: str) -> int:
    """One request of a new conversation (its own opening line) asking about Ann's bees."""
    payload = {
        "model": "m",
        "max_tokens": 5,
        "messages": [
            {"role": "user", "content": opening},
            {"role": "assistant", "content": "Sure."},
            {"role": "user", "content": "Where does Ann keep her bees?"},
        ],
    }
    headers = {"x-api-key": "k", "anthropic-version": "2023-06-01", "x-tap-scope": "ann"}
    async with session.post(server.url + "/v1/messages", json=payload, headers=headers) as response:
        assert response.status == 200
        await response.read()
        return int(response.headers.get("x-tap-recalled", "0"))


async def test_recall_process_answers_and_a_forget_is_seen_at_once(isolated_home: Path, tmp_path: Path) -> None:
    async with FakeAnthropic() as up:
        config = tmp_path / "tap.toml"
        config.write_text(f'[upstream]\nanthropic = "{up.url}"\n')
        secret = {"ANTHROPIC_API_KEY": "sk-ant-api03-not-for-the-recall-process"}
        server = await asyncio.to_thread(ServeProcess(isolated_home, config=config, env=secret).start)
        try:
            status = lambda: admin(server, "GET", "/tap/status")["recall_process"]  # noqa: E731
            await until(lambda: status()["ready"], what="the recall process ready")
            environ = await asyncio.to_thread(Path(f"/proc/{status()['pid']}/environ").read_bytes)
            assert b"TAP_HOME=" in environ and b"sk-ant-api03" not in environ  # it needs no key
            bees = admin(server, "POST", "/tap/memories", {"scope": "ann", "content": "Ann keeps bees in Sintra"})
            admin(server, "POST", "/tap/memories", {"scope": "ann", "content": "Ann's favourite colour is green"})
            async with aiohttp.ClientSession() as session:
                assert await ask(session, server, "Hello there") >= 1
                assert "Ann keeps bees in Sintra" in json.dumps(up.requests[-1].json())
                assert status()["answered"] == 1
                forgotten = await asyncio.to_thread(admin, server, "DELETE", f"/tap/memories/{bees['id']}")
                assert bees["id"] in forgotten["deleted"]
                await ask(session, server, "Good morning")  # a new conversation: recalled again
                assert "Sintra" not in json.dumps(up.requests[-1].json())
                assert status()["answered"] == 2
        finally:
            await asyncio.to_thread(server.stop)
