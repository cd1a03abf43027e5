"""Turns without a timestamp (plain-text logs, JSONL or `POST /tap/ingest` without one, the history
a client sends before tap saw it) are taken as said when tap extracts them: a later update still
replaces what it updates, as it does for dated turns."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tap.records import IngestEvent, Memory, Message
from tap.wiring.runtime import Runtime
from tests.tap.memories.test_conflicts import open_rt


@pytest.fixture
def rt(isolated_home: Path) -> Iterator[Runtime]:
    runtime = open_rt(isolated_home)
    yield runtime
    runtime.close()


def tell(rt: Runtime, scope: str, conversation: str, *texts: str, first: int = 0) -> None:
    """The user's turns, each answered, with no timestamps at all."""
    messages: list[Message] = []
    for n, text in enumerate(texts, start=first):
        messages.append(Message(role="user", content=text, id=f"{conversation}:{2 * n}"))
        messages.append(Message(role="assistant", content="Noted.", id=f"{conversation}:{2 * n + 1}"))
    rt.ingestor.ingest(IngestEvent(scope=scope, conversation=conversation, source="import", messages=messages))
    rt.worker.drain()


def current(rt: Runtime, scope: str) -> list[Memory]:
    found = rt.store.list_memories(scope=scope, limit=100, include_superseded=True, excerpts=False)
    return [m for m in found if m.active]


def contents(memories: list[Memory]) -> str:
    return " | ".join(m.content for m in memories)


@pytest.mark.parametrize(
    ("before", "after", "gone", "kept"),
    [
        ("I live in Berlin.", "I moved to Lisbon last month.", "Berlin", "Lisbon"),  # a slot's new value
        ("I use vim for everything.", "I no longer use vim.", "vim for everything", "no longer"),  # a retraction
        (
            "I'm moving to Sheffield in the spring, near the river.",
            "Change of plans: I'm moving to York instead.",
            "Sheffield",
            "York",
        ),  # a change ("instead")
    ],
)
def test_a_later_undated_statement_replaces_the_one_it_updates(
    rt: Runtime, before: str, after: str, gone: str, kept: str
) -> None:
    tell(rt, "me", "first-chat", before)
    tell(rt, "me", "second-chat", after)
    active = current(rt, "me")
    assert not any(gone in m.content for m in active), contents(active)
    assert any(kept in m.content for m in active), contents(active)
    assert all(m.valid_from > 0 for m in active)


def test_in_one_undated_conversation_the_later_turn_is_the_current_value(rt: Runtime) -> None:
    tell(rt, "me", "chat", "I live in Berlin.")
    tell(rt, "me", "chat", "I live in Lisbon.", first=1)  # the same log, a later line: no change word needed
    residences = [m for m in current(rt, "me") if m.slot == "user|residence"]
    assert [m.content for m in residences] == ["The user lives in Lisbon"]
    assert not residences[0].conflicts_with


def test_two_values_in_one_undated_turn_are_still_a_conflict(rt: Runtime) -> None:
    tell(rt, "me", "chat", "I live in Porto. I live in Braga.")
    residences = [m for m in current(rt, "me") if m.slot == "user|residence"]
    assert len(residences) == 2 and all(m.conflicts_with for m in residences)
