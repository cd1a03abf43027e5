"""Telegram → tap → model → Telegram, through real webhook POSTs into a real tap app.

Each test checks what a user of the bot would see (the sendMessage the fake Bot API received),
what the model saw (the recalled memory block, injected as the proxy injects it), and what tap
captured (the exchange ingested with source "telegram" into the chat's own scope).
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from tap.recall.engine import HEADER
from testkit.fake_telegram import FakeBotAPI
from testkit.upstreams import FakeAnthropic, FakeOllama
from tests.bridges.telegram_harness import (
    ANTHROPIC_KEY,
    BOB,
    GROUP,
    GROUP_SCOPE,
    MODEL,
    PRIVATE_ANN,
    PRIVATE_BOB,
    TapTelegram,
    anthropic_text,
    last_user_text,
    mention,
    set_env,
    text_update,
)


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    set_env(monkeypatch)


def turns(home: Path) -> list[tuple[str, str, str | None, str]]:
    with sqlite3.connect(home / "telegram.db") as db:
        return db.execute("SELECT conversation, user_text, reply_text, status FROM turns ORDER BY id").fetchall()


async def test_a_message_gets_a_reply_with_memories_and_is_captured(isolated_home: Path) -> None:
    async with (
        FakeBotAPI() as api,
        FakeAnthropic(api_key=ANTHROPIC_KEY) as llm,
        TapTelegram(isolated_home, api.url, anthropic=llm.url) as tap,
    ):
        tap.remember("Ann's cat is called Miso", PRIVATE_ANN)
        llm.reply(body=anthropic_text("Your cat is called **Miso**."))
        update = text_update("What is my cat called?")
        status, _ = await tap.post(update)
        (sent,) = await api.wait_for("sendMessage")
        await tap.settle_ingest()
        ledger = tap.rt.ledger.today() if tap.rt else {}
    assert status == 200
    assert sent.params["chat_id"] == "111" and sent.params["parse_mode"] == "HTML"
    assert sent.text == "Your cat is called <b>Miso</b>."
    (request,) = llm.requests
    assert request.json()["model"] == MODEL and request.json()["system"].startswith("You are a helpful assistant")
    seen = last_user_text(request.json())
    assert seen.startswith("What is my cat called?") and HEADER in seen and "Miso" in seen
    assert api.sent("sendChatAction")[0].params["action"] == "typing"
    (event,) = tap.events
    assert (event.scope, event.source, event.conversation) == (PRIVATE_ANN, "telegram", PRIVATE_ANN)
    assert [(m.role, m.content) for m in event.messages] == [
        ("user", "What is my cat called?"),
        ("assistant", "Your cat is called **Miso**."),
    ]
    assert event.messages[0].name == "Ann" and event.messages[0].id == f"tg-111-{update['message']['message_id']}"
    assert tap.ingested_turns == 2  # the real ingestor queued both turns
    assert turns(isolated_home) == [(PRIVATE_ANN, "What is my cat called?", "Your cat is called **Miso**.", "answered")]
    assert [c["purpose"] for c in ledger["calls"]] == ["telegram-reply"] and ledger["cost_usd"] > 0


async def test_history_is_sent_and_ollama_works_the_same(isolated_home: Path) -> None:
    async with (
        FakeBotAPI() as api,
        FakeOllama() as llm,
        TapTelegram(isolated_home, api.url, ollama=llm.url, provider="ollama", extra="history_turns = 1") as tap,
    ):
        tap.remember("Ann keeps bees in Sintra", PRIVATE_ANN)
        chat = [("Hi, I am Ann", "Hello Ann!"), ("Hello again", "Hi!"), ("Where are my bees?", "In Sintra.")]
        for count, (question, answer) in enumerate(chat, start=1):
            llm.reply_content(answer)
            await tap.post(text_update(question))
            await api.wait_for("sendMessage", count)
    last = llm.requests[-1].json()
    assert last["stream"] is False and last["options"] == {"num_predict": 1024}
    roles = [(m["role"], m["content"].split("\n\n")[0]) for m in last["messages"]]
    assert roles == [
        ("system", "You are a helpful assistant in a Telegram chat. Be concise."),
        ("user", "Hello again"),  # history_turns = 1: only the previous turn
        ("assistant", "Hi!"),
        ("user", "Where are my bees?"),
    ]
    assert HEADER in last["messages"][-1]["content"] and "Sintra" in last["messages"][-1]["content"]
    assert [call.text for call in api.sent("sendMessage")] == ["Hello Ann!", "Hi!", "In Sintra."]


async def test_scopes_never_cross(isolated_home: Path) -> None:
    async with (
        FakeBotAPI() as api,
        FakeAnthropic(api_key=ANTHROPIC_KEY) as llm,
        TapTelegram(isolated_home, api.url, anthropic=llm.url, extra="allow_groups = true") as tap,
    ):
        tap.remember("The secret garden code is 4711", PRIVATE_ANN)
        tap.remember("The group meets on Thursdays about the garden", GROUP_SCOPE)
        for update in (
            text_update("What is the garden code?", user=BOB),
            mention("when does the garden group meet, what is the code?"),
            text_update("When does the garden group meet?"),
        ):
            llm.reply(body=anthropic_text("I am not sure."))
            await tap.post(update)
            await tap.settle_ingest()
    bob, group, ann = (last_user_text(r.json()) for r in llm.requests)
    assert "4711" not in bob and "Thursdays" not in bob
    assert "Thursdays" in group and "4711" not in group and group.startswith("Ann: when does the garden")
    assert "4711" in ann and "Thursdays" not in ann
    assert tap.scopes_of() == [PRIVATE_BOB, GROUP_SCOPE, PRIVATE_ANN]
    group_reply = api.sent("sendMessage")[1]
    assert group_reply.params["chat_id"] == str(GROUP["id"]) and "reply_parameters" in group_reply.params


async def test_forum_topics_are_scopes_of_their_own(isolated_home: Path) -> None:
    topic_scope = f"{GROUP_SCOPE}:topic:7"
    async with (
        FakeBotAPI() as api,
        FakeAnthropic(api_key=ANTHROPIC_KEY) as llm,
        TapTelegram(isolated_home, api.url, anthropic=llm.url, extra="allow_groups = true") as tap,
    ):
        tap.remember("In this topic we plan the honey harvest", topic_scope)
        update = mention("what do we plan here?")
        update["message"] |= {"message_thread_id": 7, "is_topic_message": True}
        llm.reply(body=anthropic_text("The honey harvest."))
        await tap.post(update)
        (sent,) = await api.wait_for("sendMessage")
        await tap.settle_ingest()
    assert sent.params["message_thread_id"] == "7"
    assert "honey harvest" in last_user_text(llm.requests[0].json())
    assert tap.scopes_of() == [topic_scope]


async def test_a_long_answer_is_split_on_paragraphs(isolated_home: Path) -> None:
    paragraphs = [f"Paragraph {i}: " + " ".join(["honey"] * 150) for i in range(12)]  # ~900 chars each
    answer = "\n\n".join(paragraphs)
    async with (
        FakeBotAPI() as api,
        FakeAnthropic(api_key=ANTHROPIC_KEY) as llm,
        TapTelegram(isolated_home, api.url, anthropic=llm.url) as tap,
    ):
        llm.reply(body=anthropic_text(answer))
        await tap.post(text_update("Tell me everything about honey"))
        await tap.settle_ingest()
    texts = [call.text for call in api.sent("sendMessage")]
    assert len(texts) == 3 and all(len(text) <= 4096 for text in texts)
    assert all(text.startswith("Paragraph") and text.endswith("honey") for text in texts)
    assert "\n\n".join(texts) == answer.strip()
    assert tap.events[0].messages[-1].content == answer.strip()  # captured whole


async def test_rejected_markdown_falls_back_to_plain_text(isolated_home: Path) -> None:
    async with (
        FakeBotAPI() as api,
        FakeAnthropic(api_key=ANTHROPIC_KEY) as llm,
        TapTelegram(isolated_home, api.url, anthropic=llm.url) as tap,
    ):
        api.fail_next(
            "sendMessage",
            400,
            "Bad Request: can't parse entities: Unsupported start tag at byte offset 4",
            when=lambda params: params.get("parse_mode") == "HTML",
        )
        llm.reply(body=anthropic_text("Use **bold** and `code`."))
        await tap.post(text_update("Format something"))
        first, second = await api.wait_for("sendMessage", 2)
        await tap.settle_ingest()
    assert first.params["parse_mode"] == "HTML" and first.text == "Use <b>bold</b> and <code>code</code>."
    assert "parse_mode" not in second.params and second.text == "Use **bold** and `code`."
    assert turns(isolated_home)[0][3] == "answered"


async def test_telegram_429_retry_after_is_respected(isolated_home: Path) -> None:
    async with (
        FakeBotAPI() as api,
        FakeAnthropic(api_key=ANTHROPIC_KEY) as llm,
        TapTelegram(isolated_home, api.url, anthropic=llm.url) as tap,
    ):
        api.fail_next("sendMessage", 429, "Too Many Requests: retry after 1", retry_after=1)
        llm.reply(body=anthropic_text("Hello!"))
        await tap.post(text_update("Hi"))
        first, second = await api.wait_for("sendMessage", 2)
        await tap.settle_ingest()
    assert first.text == second.text == "Hello!"
    assert second.at - first.at >= 0.95
    assert len(tap.events) == 1  # answered and captured once


async def test_slow_model_gets_an_apology_and_the_turn_is_kept_for_retry(isolated_home: Path) -> None:
    async with (
        FakeBotAPI() as api,
        FakeAnthropic(api_key=ANTHROPIC_KEY) as llm,
        TapTelegram(
            isolated_home, api.url, anthropic=llm.url, extra="reply_timeout_s = 0.5", typing_interval_s=0.1
        ) as tap,
    ):
        held = asyncio.Event()  # the model answers only once the apology is out (or the fake closes)
        llm.reply(body=anthropic_text("Too late"), hold=held)
        await tap.post(text_update("Remember that I like figs"))
        (apology,) = await api.wait_for("sendMessage")  # sent at reply_timeout_s, the model still thinking
        held.set()
        typing = len(api.sent("sendChatAction"))
        assert turns(isolated_home)[0][2:] == (None, "pending")
        llm.reply(body=anthropic_text("Noted: you like figs."))
        await tap.post(text_update("/retry"))
        _, answer = await api.wait_for("sendMessage", 2)
        await tap.settle_ingest()
    assert "did not answer within 0.5 s" in apology.text and "/retry" in apology.text  # the timeout, not an error
    assert typing >= 3  # typing re-sent every interval while waiting
    assert answer.text == "Noted: you like figs."
    assert last_user_text(llm.requests[-1].json()).startswith("Remember that I like figs")
    assert turns(isolated_home)[0][2:] == ("Noted: you like figs.", "answered")
    assert [m.content for m in tap.events[0].messages] == ["Remember that I like figs", "Noted: you like figs."]


async def test_model_down_gets_an_apology_at_once_and_nothing_crashes(isolated_home: Path) -> None:
    async with (
        FakeBotAPI() as api,
        TapTelegram(isolated_home, api.url, anthropic="http://127.0.0.1:9") as tap,
    ):
        await tap.post(text_update("Anyone there?"))
        (apology,) = await api.wait_for("sendMessage")  # at once: reply_timeout_s (90 s) is far past its guard
        assert turns(isolated_home)[0][3] == "pending"
        status, _ = await tap.post(text_update("Still there?"))  # the bridge keeps working
        await api.wait_for("sendMessage", 2)
    assert status == 200 and "could not get an answer from the model" in apology.text  # the error, not the timeout
    assert tap.events == []


async def test_a_pending_turn_is_folded_into_the_next_answer(isolated_home: Path) -> None:
    async with (
        FakeBotAPI() as api,
        FakeAnthropic(api_key=ANTHROPIC_KEY) as llm,
        TapTelegram(isolated_home, api.url, anthropic=llm.url) as tap,
    ):
        llm.reply(status=529, body={"type": "error", "error": {"type": "overloaded_error", "message": "busy"}})
        llm.reply(status=529, body={"type": "error", "error": {"type": "overloaded_error", "message": "busy"}})
        await tap.post(text_update("My sister is called Ida"))
        await api.wait_for("sendMessage")
        llm.reply(body=anthropic_text("Nice to hear about Ida."))
        await tap.post(text_update("Did you get that?"))
        await api.wait_for("sendMessage", 2)
        await tap.settle_ingest()
    assert last_user_text(llm.requests[-1].json()).startswith("My sister is called Ida\n\nDid you get that?")
    (event,) = tap.events
    assert [m.content for m in event.messages] == [
        "My sister is called Ida",
        "Did you get that?",
        "Nice to hear about Ida.",
    ]
    assert [status for *_, status in turns(isolated_home)] == ["answered", "answered"]


async def test_secrets_in_a_chat_are_never_written_to_the_bridge_history(isolated_home: Path) -> None:
    key = "sk-ant-api03-" + "Zq7" * 12
    async with (
        FakeBotAPI() as api,
        FakeAnthropic(api_key=ANTHROPIC_KEY) as llm,
        TapTelegram(isolated_home, api.url, anthropic=llm.url) as tap,
    ):
        llm.reply(body=anthropic_text(f"Got it: {key} is your key."))
        status, _ = await tap.post(text_update(f"my anthropic key is {key}, keep it safe"))
        await api.wait_for("sendMessage")
        await tap.settle_ingest()
    assert status == 200
    ((_, user_text, reply_text, state),) = turns(isolated_home)
    assert state == "answered" and "[REDACTED]" in user_text and "[REDACTED]" in (reply_text or "")
    assert key not in (isolated_home / "telegram.db").read_bytes().decode("utf-8", "replace")
