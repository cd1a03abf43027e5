"""Conversation identity: header, client session, continuity of the message prefix, retries, restarts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tap.ingest.capture import TurnLog
from tap.intercept.conversations import ConversationResolver, Resolved, reply_key, request_turn_ids, turn_key
from tap.intercept.dialects import ANTHROPIC, OLLAMA_CHAT, OPENAI, Dialect, JsonObject, PlainMessage

SYSTEM = [{"type": "text", "text": "You are kind.", "cache_control": {"type": "ephemeral"}}]


def req(*messages: Any, **top: Any) -> JsonObject:
    return {"model": "claude-haiku-4-5", "max_tokens": 64, "system": SYSTEM, "messages": list(messages), **top}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


class Chat:
    """A client that keeps its own history, as chat clients do; replies come from `answer`."""

    def __init__(self, conversations: ConversationResolver, dialect: Dialect = ANTHROPIC, **top: Any) -> None:
        self.conversations = conversations
        self.dialect = dialect
        self.top = top
        self.messages: list[dict[str, Any]] = []

    def resolve(self, text: str, headers: dict[str, str] | None = None) -> tuple[Resolved, JsonObject]:
        request = req(*self.messages, user(text), **self.top)
        said = self.dialect.transcript(request)
        resolved = self.conversations.resolve(
            headers or {},
            "default",
            self.dialect.client_ids(request),
            said,
            system=self.dialect.system_text(request),
            model=self.dialect.model_of(request),
        )
        return resolved, request

    def say(self, text: str, answer: str, headers: dict[str, str] | None = None) -> str:
        resolved, request = self.resolve(text, headers)
        key = self.conversations.answered(resolved, self.dialect.transcript(request), answer)
        self.conversations.persist(key, resolved.conversation)
        self.messages += [user(text), assistant(answer)]
        return resolved.conversation


@pytest.fixture
def conversations() -> ConversationResolver:
    return ConversationResolver()


def test_two_chats_opening_with_hello_get_different_ids(conversations: ConversationResolver) -> None:
    a, b = Chat(conversations), Chat(conversations)
    first_a = a.say("hello", "Hi! How can I help?")
    first_b = b.say("hello", "Hello there, what's up?")
    assert first_a != first_b
    assert a.say("I live in Porto", "Nice city.") == first_a
    assert b.say("I live in Oslo", "Cold!") == first_b


def test_a_three_turn_chat_keeps_one_id_even_when_the_client_moves_cache_control(
    conversations: ConversationResolver,
) -> None:
    chat = Chat(conversations)
    ids = {chat.say("hello", "Hi!"), chat.say("I moved to Lisbon", "Congrats.")}
    marked = [
        {**m, "content": [{"type": "text", "text": "Hi!  \n", "cache_control": {"type": "ephemeral"}}]}
        if m["role"] == "assistant" and i == 1
        else m
        for i, m in enumerate(chat.messages)
    ]
    chat.messages = marked  # breakpoint moved onto an old message, trailing whitespace added
    ids.add(chat.say("Where do I live?", "In Lisbon."))
    assert len(ids) == 1 and next(iter(ids)).startswith("c-")


def test_a_retry_keeps_its_id_until_the_exchange_completed(conversations: ConversationResolver) -> None:
    chat = Chat(conversations)
    first, request = chat.resolve("hello")
    retry, _ = chat.resolve("hello")  # the first attempt failed: no `answered`
    assert (retry.conversation, retry.how) == (first.conversation, "retry")
    conversations.answered(retry, ANTHROPIC.transcript(request), "Hi!")
    again, _ = Chat(conversations).resolve("hello")  # a new chat with the same opening, later
    assert again.conversation != first.conversation and again.how == "new"


def test_a_retry_window_expires() -> None:
    conversations = ConversationResolver(retry_window_s=0.0)
    chat = Chat(conversations)
    assert chat.resolve("hello")[0].conversation != chat.resolve("hello")[0].conversation


def test_continuity_survives_a_restart_through_the_turn_log(tmp_path: Path) -> None:
    log = TurnLog(tmp_path / "turnlog.db")
    chat = Chat(ConversationResolver(log))
    before = chat.say("hello", "Hi!")
    log.close()
    reopened = TurnLog(tmp_path / "turnlog.db")
    chat.conversations = ConversationResolver(reopened)
    assert chat.say("I moved to Lisbon", "Congrats.") == before
    reopened.close()


def test_the_header_wins_and_a_session_names_the_conversation(conversations: ConversationResolver) -> None:
    chat = Chat(conversations)
    assert chat.say("hello", "Hi!", {"x-tap-conversation": "mine"}) == "mine"
    legacy = "user_ab12_account__session_0a1b2c3d-1111-2222-3333-444455556666"
    json_form = '{"device_id":"d","account_uuid":"","session_id":"0a1b2c3d-1111-2222-3333-444455556666"}'
    one = Chat(conversations, metadata={"user_id": legacy}).say("hello", "Hi!")
    two = Chat(conversations, metadata={"user_id": json_form}).say("a different start", "Sure.")
    assert one == two and one.startswith("s-")


def test_a_user_discriminator_separates_users_but_does_not_name_a_chat(conversations: ConversationResolver) -> None:
    ann, bob = (Chat(conversations, dialect=OPENAI, user=name) for name in ("ann", "bob"))
    ann_id, bob_id = ann.say("hello", "Hi!"), bob.say("hello", "Hi!")  # identical histories
    assert ann.say("next", "ok") == ann_id and bob.say("next", "ok") == bob_id and ann_id != bob_id
    assert Chat(conversations, dialect=OPENAI, user="ann").say("hello", "Hi!") != ann_id  # a second chat


def test_the_first_message_alone_never_decides(conversations: ConversationResolver) -> None:
    ids = {Chat(conversations).say("hello", f"Hi #{i}") for i in range(5)}
    assert len(ids) == 5


def test_turn_ids_of_a_request_can_be_recomputed() -> None:
    said = OLLAMA_CHAT.transcript(
        {
            "messages": [
                {"role": "system", "content": "s"},
                {"role": "user", "content": "q1"},
                {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f"}}]},
                {"role": "tool", "content": "42", "tool_name": "f"},
                {"role": "assistant", "content": "a1"},
                {"role": "user", "content": "q2"},
            ]
        }
    )
    assert said[3] == PlainMessage("tool", "", "[tool f]42")
    ids = request_turn_ids("c", said)
    assert ids == {
        turn_key("c", 2, "q1"),
        reply_key("c", 2, "q1"),
        reply_key("c", 4, ""),
        turn_key("c", 6, "q2"),
    }
    assert turn_key("c", 2, "q1").replace("u-", "a-") == reply_key("c", 2, "q1")  # the old pairing holds
