"""`transaction` leaves no transaction open however the block ends, even when a Ctrl-C lands
right after BEGIN or COMMIT ran (the interrupt is raised between bytecodes, after the call)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tap.sqlite import connect, transaction


class InterruptedAfter(sqlite3.Connection):
    """A real connection that raises KeyboardInterrupt once, just after running a statement that
    starts with `after` - as a Ctrl-C arriving during that call does."""

    after = ""

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:  # type: ignore[override]
        cursor = super().execute(sql, *args)
        if self.after and sql.startswith(self.after):
            self.after = ""
            raise KeyboardInterrupt
        return cursor


@pytest.fixture
def db(tmp_path: Path) -> sqlite3.Connection:
    conn = connect(tmp_path / "t.db")
    conn.execute("CREATE TABLE t (x INTEGER)")
    conn.close()
    interrupted = sqlite3.connect(tmp_path / "t.db", isolation_level=None, factory=InterruptedAfter)
    return interrupted


def rows(db: sqlite3.Connection) -> list[int]:
    return [x for (x,) in db.execute("SELECT x FROM t ORDER BY x")]


def test_committed_and_rolled_back(db: sqlite3.Connection) -> None:
    with transaction(db):
        db.execute("INSERT INTO t VALUES (1)")
    with pytest.raises(ValueError), transaction(db):
        db.execute("INSERT INTO t VALUES (2)")
        raise ValueError
    assert rows(db) == [1]
    assert not db.in_transaction


def test_an_interrupt_just_after_begin_leaves_no_transaction_open(db: sqlite3.Connection) -> None:
    db.after = "BEGIN"  # type: ignore[attr-defined]
    with pytest.raises(KeyboardInterrupt), transaction(db):
        db.execute("INSERT INTO t VALUES (1)")
    assert not db.in_transaction
    with transaction(db):  # "cannot start a transaction within a transaction" before the fix
        db.execute("INSERT INTO t VALUES (2)")
    assert rows(db) == [2]


def test_an_interrupt_just_after_commit_keeps_what_was_committed(db: sqlite3.Connection) -> None:
    db.after = "COMMIT"  # type: ignore[attr-defined]
    with pytest.raises(KeyboardInterrupt), transaction(db):
        db.execute("INSERT INTO t VALUES (1)")
    assert not db.in_transaction
    with transaction(db):
        db.execute("INSERT INTO t VALUES (2)")
    assert rows(db) == [1, 2]
