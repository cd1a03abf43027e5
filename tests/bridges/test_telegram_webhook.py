"""The webhook's bad inputs and faults, each on its own: secret, malformed JSON, retries, odd update
types, slow models, the token in logs, and a Bot API that rejects the token or is not there."""

from __future__ import annotations

import asyncio
import logging
import socket
import sqlite3
import time
from pathlib import Path

import aiohttp
import pytest

from bridges.telegram import bridge
from tap.errors import ConfigError
from testkit.fake_telegram import TOKEN, FakeBotAPI
from testkit.upstreams import FakeAnthropic
from testkit.waits import until
from tests.bridges.telegram_harness import (
    ANN,
    ANTHROPIC_KEY,
    TapTelegram,
    anthropic_text,
    message,
    set_env,
    text_update,
)


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    set_env(monkeypatch)


def seen_updates(home: Path) -> list[int]:
    with sqlite3.connect(home / "telegram.db") as db:
        return [row[0] for row in db.execute("SELECT update_id FROM seen_updates ORDER BY update_id")]


@pytest.mark.parametrize("secret", [None, "", "wrong-secret", "test-webhook-secret_4"])
async def test_wrong_or_missing_secret_is_401_and_nothing_is_processed(isolated_home: Path, secret: str | None) -> None:
    async with (
        FakeBotAPI() as api,
        FakeAnthropic(api_key=ANTHROPIC_KEY) as llm,
        TapTelegram(isolated_home, api.url, anthropic=llm.url) as tap,
    ):
        update = text_update("hello")
        status, _ = await tap.post(update, secret=secret)
        llm.reply(body=anthropic_text("Hi Ann"))
        assert (await tap.post(update))[0] == 200  # the same update with the right secret is processed
        (sent,) = await api.wait_for("sendMessage")
        # once the accepted copy is answered, the refused one has left no trace: one model call, one reply
        assert (status, len(llm.requests), len(api.sent("sendMessage"))) == (401, 1, 1)
        assert seen_updates(isolated_home) == [update["update_id"]]
    assert sent.text == "Hi Ann"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b'{"update_id": 5, "message": ', "invalid JSON"),
        (b"[1, 2, 3]", "must be a JSON object"),
        (b'{"message": {"text": "no id"}}', "update_id"),
        (b'{"update_id": "7"}', "update_id"),
        (b'{"update_id": 8, "message": {"message_id": 1, "text": "no chat or date"}}', "malformed update"),
    ],
)
async def test_malformed_update_is_400_logged_and_the_server_carries_on(
    isolated_home: Path, caplog: pytest.LogCaptureFixture, body: bytes, reason: str
) -> None:
    async with (
        FakeBotAPI() as api,
        FakeAnthropic(api_key=ANTHROPIC_KEY) as llm,
        TapTelegram(isolated_home, api.url, anthropic=llm.url) as tap,
    ):
        status, text = await tap.post(raw=body)
        llm.reply(body=anthropic_text("Still here"))
        after, _ = await tap.post(text_update("are you ok?"))
        (sent,) = await api.wait_for("sendMessage")
    assert status == 400 and reason in text
    assert "rejected a malformed update" in caplog.text
    assert after == 200 and sent.text == "Still here"


async def test_a_retried_update_is_processed_once_even_after_a_restart(isolated_home: Path) -> None:
    chat, command = text_update("Only once, please"), text_update("/remember I water the bees daily")
    async with FakeBotAPI() as api, FakeAnthropic(api_key=ANTHROPIC_KEY) as llm:
        llm.reply(body=anthropic_text("Once."))
        async with TapTelegram(isolated_home, api.url, anthropic=llm.url, real_store=True) as tap:
            statuses = [(await tap.post(update))[0] for update in (chat, command, chat, command)]
            await tap.settle_ingest()
        async with TapTelegram(isolated_home, api.url, anthropic=llm.url, real_store=True) as tap:
            statuses += [(await tap.post(update))[0] for update in (chat, command)]
            await tap.settle_ingest()
            assert tap.rt is not None
            memories = tap.rt.memories.list_memories(scope="telegram:private:111")
    assert statuses == [200] * 6
    assert len(llm.requests) == 1 and len(memories) == 1 and len(api.sent("sendMessage")) == 2
    assert seen_updates(isolated_home) == sorted([chat["update_id"], command["update_id"]])


@pytest.mark.parametrize(
    "payload",
    [
        {"edited_message": {**message("edited text"), "edit_date": int(time.time())}},
        {
            "message_reaction": {
                "chat": {"id": 111, "type": "private", "first_name": "Ann"},
                "message_id": 10,
                "user": ANN,
                "date": int(time.time()),
                "old_reaction": [],
                "new_reaction": [{"type": "emoji", "emoji": "👍"}],
            }
        },
        {
            "message": {key: value for key, value in message("x").items() if key != "text"}
            | {
                "sticker": {
                    "file_id": "CAACAgIAAxk",
                    "file_unique_id": "AgADsw",
                    "type": "regular",
                    "width": 512,
                    "height": 512,
                    "is_animated": False,
                    "is_video": False,
                }
            }
        },
        {
            "channel_post": {
                "message_id": 3,
                "date": int(time.time()),
                "chat": {"id": -1009, "type": "channel"},
                "text": "news",
            }
        },
        {"poll_answer": {"poll_id": "p1", "user": ANN, "option_ids": [0]}},
    ],
    ids=["edited_message", "message_reaction", "sticker", "channel_post", "poll_answer"],
)
async def test_update_types_tap_does_not_handle_are_ignored_politely(
    isolated_home: Path, payload: dict[str, object]
) -> None:
    async with (
        FakeBotAPI() as api,
        FakeAnthropic(api_key=ANTHROPIC_KEY) as llm,
        TapTelegram(isolated_home, api.url, anthropic=llm.url) as tap,
    ):
        status, _ = await tap.post({"update_id": 4242, **payload})
        await tap.settle_ingest()
        with sqlite3.connect(isolated_home / "telegram.db") as db:
            stored = db.execute("SELECT count(*) FROM turns").fetchone()[0]
    assert status == 200
    assert [c.method for c in api.calls if c.method != "getMe"] == []
    assert llm.requests == [] and tap.events == [] and stored == 0


async def test_the_webhook_answers_at_once_while_the_model_is_slow(isolated_home: Path) -> None:
    async with (
        FakeBotAPI() as api,
        FakeAnthropic(api_key=ANTHROPIC_KEY) as llm,
        TapTelegram(isolated_home, api.url, anthropic=llm.url) as tap,
    ):
        thinking = asyncio.Event()
        llm.reply(body=anthropic_text("Thought about it."), hold=thinking)
        status, _ = await tap.post(text_update("Think hard"))
        before = api.sent("sendMessage")  # the webhook has answered; the model has not
        thinking.set()
        (sent,) = await api.wait_for("sendMessage")
    assert status == 200 and before == []
    assert sent.text == "Thought about it."


async def test_the_bot_token_never_reaches_the_logs(isolated_home: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    async with (
        FakeBotAPI() as api,
        FakeAnthropic(api_key=ANTHROPIC_KEY) as llm,
        TapTelegram(isolated_home, api.url, anthropic=llm.url) as tap,
    ):
        api.fail_next("sendMessage", 429, "Too Many Requests: retry after 1", retry_after=1)
        api.fail_next("sendChatAction", 500, "Internal Server Error")
        llm.reply(body=anthropic_text("Hello!"))
        await tap.post(text_update("Hi"))
        await api.wait_for("sendMessage", 2)
        await tap.settle_ingest()
        logging.getLogger("tests").error("an error mentioning %s", TOKEN, exc_info=ValueError(f"bad {TOKEN}"))
    assert "HTTP Request: POST" in caplog.text and "/bot[redacted]/getMe" in caplog.text
    assert TOKEN not in caplog.text
    assert all(TOKEN not in record.getMessage() for record in caplog.records)


async def test_a_rejected_token_stops_start_up_without_showing_it(isolated_home: Path) -> None:
    async with FakeBotAPI(token="987654:a-different-token-than-the-one-configured") as api:
        with pytest.raises(ConfigError) as raised:
            async with TapTelegram(isolated_home, api.url):
                pass
    assert "rejected the token in $TAP_TELEGRAM_TOKEN" in str(raised.value)
    assert TOKEN not in str(raised.value) and raised.value.__cause__ is None


@pytest.mark.parametrize("unset", ["TAP_TELEGRAM_TOKEN", "TAP_TELEGRAM_SECRET", "ANTHROPIC_API_KEY"])
async def test_missing_env_vars_are_config_errors_naming_them(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch, unset: str
) -> None:
    monkeypatch.delenv(unset)
    with pytest.raises(ConfigError, match=f"environment variable {unset} is not set"):
        async with TapTelegram(isolated_home, "http://127.0.0.1:9"):
            pass


@pytest.mark.parametrize("path", ["/tap/telegram", "/v1/hook", "/api/telegram", "/ui"])
async def test_a_webhook_path_under_taps_own_routes_is_refused(isolated_home: Path, path: str) -> None:
    with pytest.raises(ConfigError, match=f"telegram.path: '{path}' is under"):
        async with TapTelegram(isolated_home, "http://127.0.0.1:9", extra=f'path = "{path}"'):
            pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_an_unreachable_bot_api_does_not_stop_tap_and_the_bridge_reconnects(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bridge, "FIRST_RETRY_S", 0.05)  # the backoff as in production, from 0.05 s instead of 1 s
    port = free_port()
    async with (
        FakeAnthropic(api_key=ANTHROPIC_KEY) as llm,
        TapTelegram(isolated_home, f"http://127.0.0.1:{port}", anthropic=llm.url) as tap,
    ):
        async with aiohttp.ClientSession() as session, session.get(tap.url + "/tap/health") as health:
            assert health.status == 200
        status, _ = await tap.post(text_update("too early"))
        assert status == 503  # Telegram will deliver it again later
        async with FakeBotAPI(port=port) as api:
            llm.reply(body=anthropic_text("Back online."))

            async def accepted() -> int:  # the bridge retries getMe with backoff (0.05 s, 0.1 s, …)
                status, _ = await tap.post(text_update("now?"))
                return status if status != 503 else 0

            status = await until(accepted, poll=0.02, what="the bridge to take updates again")
            (sent,) = await api.wait_for("sendMessage")
            await tap.settle_ingest()
    assert status == 200 and sent.text == "Back online."
