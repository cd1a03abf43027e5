"""The bridge inside a real `tap serve` process, set up as docs/ways-in.md tells a user to."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp
import pytest

from testkit.fake_telegram import TOKEN, FakeBotAPI
from testkit.serve_process import ServeProcess
from testkit.upstreams import FakeAnthropic
from tests.bridges.telegram_harness import ANTHROPIC_KEY, SECRET, anthropic_text, last_user_text, set_env, text_update

pytestmark = pytest.mark.slow


async def post(url: str, update: dict[str, object]) -> int:
    headers = {"X-Telegram-Bot-Api-Secret-Token": SECRET}
    async with aiohttp.ClientSession() as session, session.post(url, data=json.dumps(update), headers=headers) as r:
        return r.status


async def test_tap_serve_answers_telegram_with_memories(
    isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_env(monkeypatch)
    async with FakeBotAPI() as api, FakeAnthropic(api_key=ANTHROPIC_KEY) as llm:
        config = tmp_path / "config.toml"
        config.write_text(
            "[telegram]\nenabled = true\nallowed_users = [111]\n"
            f'api_url = "{api.url}"\nanthropic_url = "{llm.url}"\nmodel = "claude-haiku-4-5"\n',
            encoding="utf-8",
        )
        server = await asyncio.to_thread(ServeProcess(isolated_home, config=config).start)
        try:
            webhook = server.url + "/telegram/webhook"
            assert await post(webhook, text_update("/remember My bees live in Sintra")) == 200
            await api.wait_for("sendMessage")
            llm.reply(body=anthropic_text("In Sintra."))
            assert await post(webhook, text_update("Where do my bees live?")) == 200
            _, answer = await api.wait_for("sendMessage", 2)
        finally:
            output = await asyncio.to_thread(server.stop)
    assert answer.text == "In Sintra." and "My bees live in Sintra" in last_user_text(llm.requests[0].json())
    assert "telegram: bot @tap_test_bot is ready; webhook at POST /telegram/webhook" in output
    assert "/bot[redacted]/" in output and TOKEN not in output
    assert "tap: stopped" in output
