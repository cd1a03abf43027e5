"""The mitm spool's file (bridges.mitm.spool): what waits is scrubbed, kept in order, forgotten with
its scope, and taken by a process that owns the store."""

from __future__ import annotations

from pathlib import Path

from bridges.mitm.spool import SPOOL_FILE, Spool, drain_into
from tap.records import IngestEvent, Message

SECRET = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789"


def event(scope: str, text: str) -> IngestEvent:
    return IngestEvent(
        scope=scope, conversation=f"c-{text[:4]}", source="mitm", messages=[Message(role="user", content=text)]
    )


def test_waiting_exchanges_are_scrubbed_kept_in_order_and_forgotten_by_scope(tmp_path: Path) -> None:
    spool = Spool(tmp_path / SPOOL_FILE)
    try:
        spool.put(event("ann", f"my key is {SECRET}"))
        spool.put(event("bo", "I sail on Sundays"))
        spool.put(event("ann", "I live in Lisbon"))
        assert SECRET.encode() not in (tmp_path / SPOOL_FILE).read_bytes()
        assert spool.forget_scope("bo") == 1 and spool.count() == 2
    finally:
        spool.close()
    taken: list[IngestEvent] = []
    assert drain_into(tmp_path, lambda e: taken.append(e) or 1) == 2
    assert [e.messages[0].content for e in taken][1] == "I live in Lisbon" and SECRET not in taken[0].messages[
        0
    ].content
    assert drain_into(tmp_path, lambda e: 1) == 0  # nothing left
    assert drain_into(tmp_path / "nowhere", lambda e: 1) == 0 and not (tmp_path / "nowhere").exists()
