"""The admin-API client: large events split for `POST /tap/ingest`, the error a dead server gives.
(Its other methods run against a real server in tests/tap/cli/test_cli_remote.py.)"""

from __future__ import annotations

import socket

import pytest

from tap.cli.admin_client import AdminClient, split_event
from tap.errors import StoreError
from tap.records import IngestEvent, Message


def event(count: int, size: int = 10) -> IngestEvent:
    messages = [Message(role="user", content="x" * size, id=f"m{i}") for i in range(count)]
    return IngestEvent(scope="s", conversation="c", source="logtail", messages=messages)


def test_parts_respect_both_limits_and_keep_the_order() -> None:
    parts = list(split_event(event(2500), max_messages=1000))
    assert [len(p.messages) for p in parts] == [1000, 1000, 500]
    assert [m.id for p in parts for m in p.messages] == [f"m{i}" for i in range(2500)]
    assert {(p.scope, p.conversation, p.source) for p in parts} == {("s", "c", "logtail")}
    by_bytes = list(split_event(event(10, size=1000), max_bytes=2500))
    assert [len(p.messages) for p in by_bytes] == [2] * 5
    assert [len(p.messages) for p in split_event(event(1, size=10_000), max_bytes=100)] == [1]
    assert list(split_event(event(0))) == []


def test_a_server_that_does_not_answer_is_a_store_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(StoreError, match="did not answer"):
        AdminClient(f"http://127.0.0.1:{port}", "token", timeout=2).ingest([event(1)])
