"""A Bot API that answers start-up with something python-telegram-bot cannot use (`{"ok": true}`
without `result`) does not stop tap: it is logged, tap serves everything else, and the bridge
connects once the Bot API answers properly."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from bridges.telegram import bridge
from testkit.fake_telegram import TOKEN, BotCall, FakeBotAPI
from testkit.upstreams import FakeAnthropic
from testkit.waits import until
from tests.bridges.telegram_harness import ANTHROPIC_KEY, TapTelegram, anthropic_text, set_env, text_update


class ResultlessBotAPI(FakeBotAPI):
    """Answers getMe with `{"ok": true}` (no `result`) until `fixed` is set."""

    fixed = False

    async def _handle(self, request: web.Request) -> web.Response:
        if request.match_info["method"] == "getMe" and not self.fixed:
            self.calls.append(BotCall("getMe", {}, time.monotonic()))
            return web.json_response({"ok": True})
        return await super()._handle(request)


async def test_a_bot_api_answer_without_result_is_logged_and_tap_keeps_serving(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    set_env(monkeypatch)
    monkeypatch.setattr(bridge, "FIRST_RETRY_S", 0.05)  # the backoff as in production, from 0.05 s instead of 1 s
    with caplog.at_level(logging.WARNING, logger="bridges.telegram.bridge"):
        async with (
            ResultlessBotAPI() as api,
            FakeAnthropic(api_key=ANTHROPIC_KEY) as llm,
            TapTelegram(isolated_home, api.url, anthropic=llm.url) as tap,
        ):
            async with aiohttp.ClientSession() as session, session.get(tap.url + "/tap/health") as health:
                assert health.status == 200
            status, _ = await tap.post(text_update("too early"))
            assert status == 503  # Telegram delivers it again later
            api.fixed = True
            llm.reply(body=anthropic_text("Connected."))

            async def accepted() -> int:  # the bridge retries getMe with backoff (0.05 s, 0.1 s, …)
                status, _ = await tap.post(text_update("now?"))
                return status if status != 503 else 0

            status = await until(accepted, poll=0.02, what="the bridge to take updates again")
            (sent,) = await api.wait_for("sendMessage")
            await tap.settle_ingest()
    assert status == 200 and sent.text == "Connected."
    warning = next(r.getMessage() for r in caplog.records if "cannot use the Bot API" in r.getMessage())
    assert "KeyError" in warning and "tap keeps serving" in warning and TOKEN not in caplog.text
