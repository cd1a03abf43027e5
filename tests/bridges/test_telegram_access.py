"""Who may talk to the bot: allowed users, the one polite refusal, groups only when addressed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from testkit.fake_telegram import BOT, FakeBotAPI
from testkit.upstreams import FakeAnthropic
from tests.bridges.telegram_harness import (
    ANTHROPIC_KEY,
    BOB,
    EVE,
    GROUP,
    TapTelegram,
    anthropic_text,
    button_update,
    last_user_text,
    mention,
    message,
    set_env,
    text_update,
)


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    set_env(monkeypatch)


def stored_turns(home: Path) -> int:
    with sqlite3.connect(home / "telegram.db") as db:
        return int(db.execute("SELECT count(*) FROM turns").fetchone()[0])


async def test_a_stranger_is_refused_once_and_nothing_is_stored(isolated_home: Path) -> None:
    async with (
        FakeBotAPI() as api,
        FakeAnthropic(api_key=ANTHROPIC_KEY) as llm,
        TapTelegram(isolated_home, api.url, anthropic=llm.url) as tap,
    ):
        sticker = message("", user=EVE)
        del sticker["text"]
        sticker["sticker"] = {"file_id": "CAAC", "file_unique_id": "AgAD", "type": "regular", "width": 512,
                              "height": 512, "is_animated": False, "is_video": False}  # fmt: skip
        for update in (
            {"update_id": 1, "message": sticker},
            text_update("hello, who are you?", user=EVE),
            text_update("/memories", user=EVE),
        ):
            assert (await tap.post(update))[0] == 200
        await tap.settle_ingest()
    (refusal,) = api.sent("sendMessage")
    assert refusal.params["chat_id"] == "666" and "666" in refusal.text and "allowed_users" in refusal.text
    assert llm.requests == [] and tap.events == [] and stored_turns(isolated_home) == 0


async def test_groups_are_refused_once_when_not_allowed_and_otherwise_ignored(isolated_home: Path) -> None:
    async with (
        FakeBotAPI() as api,
        FakeAnthropic(api_key=ANTHROPIC_KEY) as llm,
        TapTelegram(isolated_home, api.url, anthropic=llm.url) as tap,
    ):
        for update in (
            text_update("just chatting among ourselves", chat=GROUP),
            mention("can you help?"),
            mention("hello??"),
        ):
            await tap.post(update)
        await tap.settle_ingest()
    (refusal,) = api.sent("sendMessage")
    assert refusal.params["chat_id"] == str(GROUP["id"]) and "private chats" in refusal.text
    assert llm.requests == [] and stored_turns(isolated_home) == 0


async def test_in_allowed_groups_the_bot_answers_only_when_addressed(isolated_home: Path) -> None:
    async with (
        FakeBotAPI() as api,
        FakeAnthropic(api_key=ANTHROPIC_KEY) as llm,
        TapTelegram(isolated_home, api.url, anthropic=llm.url, extra="allow_groups = true") as tap,
    ):
        bot_said = {"message_id": 77, "date": 1, "from": BOT, "chat": GROUP, "text": "I said this"}
        updates = [
            text_update("not for the bot", chat=GROUP),
            text_update("/start@some_other_bot", chat=GROUP),
            text_update("/frobnicate", chat=GROUP),  # a bare command the bot does not have: for another bot
            text_update("/memories", chat=GROUP),  # a bare command the bot has
            text_update("replying to the bot", chat=GROUP, reply_to_message=bot_said),
            mention("and a mention", user=EVE),  # addressed, but Eve is not allowed
            mention("a mention by Bob", user=BOB),
        ]
        for update in updates:
            llm.reply(body=anthropic_text("ok"))
            await tap.post(update)
            await tap.settle_ingest()
    seen = [last_user_text(r.json()) for r in llm.requests]
    assert seen == ["Ann: replying to the bot", "Bob: a mention by Bob"]
    texts = [c.text for c in api.sent("sendMessage")]
    assert len([t for t in texts if "666" in t]) == 1  # Eve's refusal
    assert len([t for t in texts if "do not remember anything" in t]) == 1  # /memories
    assert not [t for t in texts if "do not know that command" in t]


async def test_buttons_only_work_for_allowed_users(isolated_home: Path) -> None:
    async with (
        FakeBotAPI() as api,
        TapTelegram(isolated_home, api.url) as tap,
    ):
        tap.remember("Ann likes figs", "telegram:private:111")
        await tap.post(button_update("forget-all:whatever", user=EVE, chat={"id": 111, "type": "private"}))
        (answer,) = await api.wait_for("answerCallbackQuery")
        await tap.settle_ingest()
        assert tap.rt is not None
        left = tap.rt.memories.list_memories(scope="telegram:private:111")
    assert "not for you" in answer.params["text"]
    assert api.sent("editMessageText") == [] and len(left) == 1
