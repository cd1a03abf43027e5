"""A full data dir under a real `tap serve` (a small tmpfs of its own: testkit.small_disk).

The chat goes on; what cannot be stored is said (507 from the API, `x-tap-degraded:
capture-failed` on proxied exchanges, health degraded with the reason), the store is never
written into a full disk (embedded Chroma did not come back from such a write, holding the
interpreter lock: the whole process froze), and once space is back everything resumes by itself:
the exchanges made meanwhile are captured and extracted."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from testkit.serve_process import ServeProcess, admin, configured
from testkit.small_disk import fill, small_disk_prefix
from testkit.upstreams import FakeAnthropic
from testkit.waits import until

pytestmark = pytest.mark.slow

H = {"x-api-key": "k", "anthropic-version": "2023-06-01"}


async def chat(session: aiohttp.ClientSession, server: ServeProcess, text: str, conversation: str) -> Any:
    payload = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": text}]}
    headers = {**H, "x-tap-conversation": conversation}
    async with session.post(server.url + "/v1/messages", json=payload, headers=headers) as response:
        assert response.status == 200
        await response.read()
        return response.headers


async def health(session: aiohttp.ClientSession, server: ServeProcess) -> dict[str, Any]:
    async with session.get(server.url + "/tap/health") as response:
        return dict(await response.json())


async def ingest(session: aiohttp.ClientSession, server: ServeProcess, text: str) -> tuple[int, Any]:
    event = {
        "scope": "default",
        "conversation": "notes",
        "source": "manual",
        "messages": [{"role": "user", "content": text}],
    }
    headers = {"Authorization": f"Bearer {server.token}"}
    async with session.post(server.url + "/tap/ingest", json=event, headers=headers) as response:
        return response.status, await response.json()


async def test_a_full_data_dir_is_said_and_everything_resumes_once_space_is_back(
    isolated_home: Path, tmp_path: Path
) -> None:
    prefix = small_disk_prefix(160)
    if prefix is None:
        pytest.skip("this machine cannot mount a small file system for the test (no mount namespace)")
    async with FakeAnthropic() as up:
        server = configured(
            isolated_home,
            tmp_path,
            f'[upstream]\nanthropic = "{up.url}"\n[extract]\nflush_after_s = 1.0\n',
            prefix=prefix,
        )
        await asyncio.to_thread(server.start)
        timeout = aiohttp.ClientTimeout(total=30)  # a frozen server fails the test instead of hanging it
        try:
            async with aiohttp.ClientSession(timeout=timeout) as session:
                for n in range(3):  # queued, extracted into the store while the disk is full
                    await chat(
                        session,
                        server,
                        f"I decided to move to Lisbon{n} in May and my sister Ana keeps bees.",
                        f"before-{n}",
                    )
                filler = await asyncio.to_thread(fill, server)

                status, body = await ingest(session, server, "I bought a red bicycle")
                assert status == 507 and "out of space" in body["error"], body
                await chat(session, server, "I decided to learn the cello this winter.", "during")  # the chat goes on
                flagged = await chat(session, server, "My favourite tea is genmaicha.", "during-2")
                assert "capture-failed" in flagged.get("x-tap-degraded", "")
                doc = await health(session, server)
                assert doc["status"] == "degraded" and "out of space" in doc["reason"], json.dumps(doc)
                assert str(isolated_home) not in json.dumps(doc)  # no path for whoever asks
                await asyncio.sleep(2)  # extraction of the chunks queued before meets the full disk
                assert (await health(session, server))["status"] == "degraded"  # still answering

                await asyncio.to_thread(filler.unlink)
                await until(lambda: health(session, server), what="health answering")
                await until(lambda: _ok(session, server), within=60, what="health ok again once space is back")
                captured = admin(server, "GET", "/tap/status")["capture"]
                assert captured["waiting"] == 0 and captured["lost"] == 0, captured
                status, _ = await ingest(session, server, "I bought a red bicycle")
                assert status == 202
                await until(
                    lambda: _remembered(server, "genmaicha"), within=60, what="the exchange made meanwhile extracted"
                )
                assert not (await chat(session, server, "What tea do I like?", "after")).get("x-tap-degraded")
        finally:
            output = await asyncio.to_thread(server.stop)
        assert "Traceback" not in output.split("tap: stopping")[-1]


async def _ok(session: aiohttp.ClientSession, server: ServeProcess) -> bool:
    return (await health(session, server))["status"] == "ok"


def _remembered(server: ServeProcess, word: str) -> bool:
    found = admin(server, "GET", f"/tap/memories/search?q={word}&scope=default")
    return word in json.dumps(found["results"])
