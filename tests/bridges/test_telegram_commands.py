"""The bot's commands, through real webhook POSTs: /start /memories /forget /remember /private /usage /retry."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tap.ingest.chunker import Turn
from testkit.fake_telegram import FakeBotAPI
from testkit.upstreams import FakeAnthropic
from testkit.waits import until
from tests.bridges.telegram_harness import (
    ANTHROPIC_KEY,
    BOB,
    PRIVATE_ANN,
    PRIVATE_BOB,
    TapTelegram,
    anthropic_text,
    button_update,
    set_env,
    text_update,
)


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    set_env(monkeypatch)


def buttons(call_markup: dict[str, list[list[dict[str, str]]]]) -> list[tuple[str, str]]:
    return [(b["text"], b["callback_data"]) for row in call_markup["inline_keyboard"] for b in row]


def active(tap: TapTelegram, scope: str) -> list[str]:
    assert tap.rt is not None
    return sorted(m.content for m in tap.rt.memories.list_memories(scope=scope, limit=100))


async def test_start_explains_what_is_remembered_and_the_commands(isolated_home: Path) -> None:
    async with FakeBotAPI() as api, TapTelegram(isolated_home, api.url) as tap:
        await tap.post(text_update("/start"))
        (sent,) = await api.wait_for("sendMessage")
        await tap.settle_ingest()
    for command in ("/memories", "/remember", "/forget", "/forget all", "/private", "/usage", "/retry"):
        assert command in sent.text
    assert "this chat only" in sent.text and sent.params["parse_mode"] == "HTML"
    assert tap.events == []


async def test_remember_stores_a_memory_in_this_chat_only(isolated_home: Path) -> None:
    async with FakeBotAPI() as api, TapTelegram(isolated_home, api.url) as tap:
        await tap.post(text_update("/remember I am allergic to wasps"))
        await tap.post(text_update("/remember", user=BOB))
        sent = {call.params["chat_id"]: call for call in await api.wait_for("sendMessage", 2)}
        first, usage = sent["111"], sent["222"]
        assert tap.rt is not None
        (memory,) = tap.rt.memories.list_memories(scope=PRIVATE_ANN)
    assert memory.content == "I am allergic to wasps" and memory.source == "telegram"
    assert memory.id in first.text and "Usage: /remember" in usage.text
    assert active(tap, PRIVATE_BOB) == []


async def test_memories_are_listed_in_pages(isolated_home: Path) -> None:
    async with FakeBotAPI() as api, TapTelegram(isolated_home, api.url) as tap:
        for i in range(12):
            tap.remember(f"Fact number {i:02d} about Ann", PRIVATE_ANN)
        tap.remember("Bob's own fact", PRIVATE_BOB)
        await tap.post(text_update("/memories"))
        (page1,) = await api.wait_for("sendMessage")
        assert buttons(page1.json("reply_markup")) == [("Older ›", "mem:1")]
        await tap.post(button_update("mem:1"))
        (page2,) = await api.wait_for("editMessageText")
        await tap.post(text_update("/memories", user=BOB))
        _, bob = await api.wait_for("sendMessage", 2)
    assert page1.text.count("Fact number") == 10 and "page 1" in page1.text
    assert page2.text.count("Fact number") == 2 and "11." in page2.text
    assert buttons(page2.json("reply_markup")) == [("‹ Newer", "mem:0")]
    assert "Bob's own fact" in bob.text and "Ann" not in bob.text


async def test_forget_one_memory_only_in_this_chat(isolated_home: Path) -> None:
    async with FakeBotAPI() as api, TapTelegram(isolated_home, api.url) as tap:
        mine = tap.remember("Ann's locker code is 1234", PRIVATE_ANN)
        bobs = tap.remember("Bob's locker code is 9876", PRIVATE_BOB)
        await tap.post(text_update(f"/forget {bobs}"))
        await tap.post(text_update(f"/forget {mine}"))
        refused, done = await api.wait_for("sendMessage", 2)
    assert "no memory" in refused.text and bobs in refused.text
    assert done.text.startswith("Forgotten") and "1234" in done.text
    assert active(tap, PRIVATE_ANN) == [] and active(tap, PRIVATE_BOB) == ["Bob's locker code is 9876"]


async def test_forget_all_asks_first_and_only_the_asker_can_confirm(isolated_home: Path) -> None:
    async with (
        FakeBotAPI() as api,
        FakeAnthropic(api_key=ANTHROPIC_KEY) as llm,
        TapTelegram(isolated_home, api.url, anthropic=llm.url) as tap,
    ):
        tap.remember("Ann lives in Porto", PRIVATE_ANN)
        tap.remember("Ann has two dogs", PRIVATE_ANN)
        tap.remember("Bob lives in Braga", PRIVATE_BOB)
        llm.reply(body=anthropic_text("Hi"))
        await tap.post(text_update("hello"))
        await tap.post(text_update("/forget all"))
        _, question = await api.wait_for("sendMessage", 2)
        (yes, yes_data), (_, no_data) = buttons(question.json("reply_markup"))
        await tap.post(button_update("forget-all:forged-nonce"))
        await tap.post(button_update(yes_data, user=BOB, chat={"id": 111, "type": "private"}))  # Bob is allowed…
        expired, not_yours = await api.wait_for("editMessageText", 2)
        assert active(tap, PRIVATE_ANN) == ["Ann has two dogs", "Ann lives in Porto"]
        await tap.post(button_update(yes_data))
        _, _, done = await api.wait_for("editMessageText", 3)
        await tap.post(button_update(yes_data))  # a second press does nothing more
        *_, again = await api.wait_for("editMessageText", 4)
        with sqlite3.connect(isolated_home / "telegram.db") as db:
            history = db.execute("SELECT count(*) FROM turns").fetchone()[0]
    assert "Forget <b>everything</b>" in question.text and no_data == "forget-cancel" and yes.startswith("Yes")
    assert "expired" in expired.text and "Only the person who asked" in not_yours.text
    assert done.text == "Done: forgot 2 memories and 1 message of chat history."
    assert "expired" in again.text
    assert active(tap, PRIVATE_ANN) == [] and active(tap, PRIVATE_BOB) == ["Bob lives in Braga"] and history == 0


async def test_forget_all_can_be_cancelled(isolated_home: Path) -> None:
    async with FakeBotAPI() as api, TapTelegram(isolated_home, api.url) as tap:
        tap.remember("Ann lives in Porto", PRIVATE_ANN)
        await tap.post(text_update("/forget all"))
        (question,) = await api.wait_for("sendMessage")
        _, (_, cancel) = buttons(question.json("reply_markup"))
        await tap.post(button_update(cancel))
        (cancelled,) = await api.wait_for("editMessageText")
    assert "nothing was forgotten" in cancelled.text and active(tap, PRIVATE_ANN) == ["Ann lives in Porto"]


def chat_turns(who: str, count: int) -> list[Turn]:
    """Turns of a long chat (enough for several chunks), as the bridge would have ingested them."""
    return [
        Turn(id=f"{who}-{i}", role="user", speaker=who, text=f"{who} planted tree number {i} in the garden " * 8)
        for i in range(count)
    ]


def queued(home: Path, scope: str) -> tuple[int, int]:
    """(open windows, chunks) of a scope in the extraction queue's file."""
    with sqlite3.connect(home / "queue.db") as db:
        windows = db.execute("SELECT count(*) FROM windows WHERE scope = ?", (scope,)).fetchone()[0]
        chunks = db.execute("SELECT count(*) FROM chunks WHERE scope = ?", (scope,)).fetchone()[0]
    return int(windows), int(chunks)


async def test_forget_all_drops_the_chats_conversation_waiting_for_extraction(isolated_home: Path) -> None:
    async with FakeBotAPI() as api, TapTelegram(isolated_home, api.url) as tap:
        assert tap.rt is not None
        queue = tap.rt.queue
        queue.add_turns(PRIVATE_ANN, "ann-chat", "telegram", chat_turns("Ann", 12))
        in_flight = queue.claim()  # the worker is extracting one of Ann's chunks right now
        assert in_flight is not None and in_flight.chunk.scope == PRIVATE_ANN
        queue.add_turns(PRIVATE_BOB, "bob-chat", "telegram", chat_turns("Bob", 12))
        ann_before, bob_before = queued(isolated_home, PRIVATE_ANN), queued(isolated_home, PRIVATE_BOB)
        tap.remember("Ann lives in Porto", PRIVATE_ANN)
        await tap.post(text_update("/forget all"))
        (question,) = await api.wait_for("sendMessage")
        (_, yes), _ = buttons(question.json("reply_markup"))
        await tap.post(button_update(yes))
        # the chunk is dropped; the confirmation then waits for the worker
        await until(lambda: queue.in_flight(PRIVATE_ANN), poll=0.01, what="the chunk in flight to be held back")
        assert queue.in_flight(PRIVATE_ANN) == 1
        assert api.sent("editMessageText") == []
        tap.remember("Ann planted twelve trees", PRIVATE_ANN)  # what the chunk in flight extracted…
        queue.done(in_flight.chunk.id, "1 added")  # …before the worker reported back
        (done,) = await api.wait_for("editMessageText")
        for item in iter(queue.claim, None):
            assert item.chunk.scope == PRIVATE_BOB
    assert ann_before[0] == 1 and ann_before[1] >= 2 and bob_before[0] == 1 and bob_before[1] >= 1
    assert done.text == "Done: forgot 2 memories and 0 messages of chat history."
    assert active(tap, PRIVATE_ANN) == [] and queued(isolated_home, PRIVATE_ANN) == (0, 0)
    assert queued(isolated_home, PRIVATE_BOB) == bob_before


async def test_private_keeps_only_the_next_message_out_of_storage(isolated_home: Path) -> None:
    async with (
        FakeBotAPI() as api,
        FakeAnthropic(api_key=ANTHROPIC_KEY) as llm,
        TapTelegram(isolated_home, api.url, anthropic=llm.url) as tap,
    ):
        tap.remember("Ann's doctor is Dr. Silva", PRIVATE_ANN)
        await tap.post(text_update("/private"))
        await api.wait_for("sendMessage")
        llm.reply(body=anthropic_text("Ask Dr. Silva."))
        await tap.post(text_update("My doctor? I have a rash, embarrassing"))
        await tap.settle_ingest()
        llm.reply(body=anthropic_text("Sunny."))
        await tap.post(text_update("How is the weather?"))
        await tap.settle_ingest()
        with sqlite3.connect(isolated_home / "telegram.db") as db:
            stored = [row[0] for row in db.execute("SELECT user_text FROM turns")]
    assert "not stored" in api.sent("sendMessage")[0].text
    assert "Dr. Silva" in str(llm.requests[0].json()["messages"])  # still answered with memories
    assert "rash" not in str(llm.requests[1].json()["messages"])  # and not in the history either
    assert stored == ["How is the weather?"]
    assert [[m.content for m in e.messages] for e in tap.events] == [["How is the weather?", "Sunny."]]


async def test_usage_shows_todays_tokens_and_cost(isolated_home: Path) -> None:
    async with (
        FakeBotAPI() as api,
        FakeAnthropic(api_key=ANTHROPIC_KEY) as llm,
        TapTelegram(isolated_home, api.url, anthropic=llm.url) as tap,
    ):
        llm.reply(body=anthropic_text("Hi"))
        await tap.post(text_update("hello"))
        await tap.settle_ingest()
        await tap.post(text_update("/usage"))
        _, usage = await api.wait_for("sendMessage", 2)
    assert "telegram-reply · anthropic claude-haiku-4-5: 1 calls, 120 tokens in, 30 out" in usage.text
    assert "Total: $0.0003" in usage.text  # 120 × $1/M + 30 × $5/M


async def test_retry_and_unknown_commands_say_what_happened(isolated_home: Path) -> None:
    async with FakeBotAPI() as api, TapTelegram(isolated_home, api.url) as tap:
        await tap.post(text_update("/retry"))
        await tap.post(text_update("/frobnicate"))
        nothing, unknown = await api.wait_for("sendMessage", 2)
    assert "nothing to retry" in nothing.text and "/start lists" in unknown.text
