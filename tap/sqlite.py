"""The one way tap opens and writes its SQLite files: WAL, usable from worker threads, created with
its folder, and one transaction helper.

Every SQLite file of tap goes through here (the queue, the turn log, the cost ledger, the
consolidation journal, the lexical index, the log-tail offsets, the hook state, the Telegram
history). Each user of a database still serialises its own access with a lock; WAL lets a reader
in one process (e.g. `tap status`) look while `tap serve` writes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal


def connect(path: Path, *, synchronous: str = "NORMAL") -> sqlite3.Connection:
    """An autocommit connection in WAL mode (explicit BEGIN for transactions: `transaction`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA synchronous={synchronous}")
    return db


@contextmanager
def transaction(
    db: sqlite3.Connection, mode: Literal["DEFERRED", "IMMEDIATE"] = "IMMEDIATE"
) -> Iterator[sqlite3.Connection]:
    """One write transaction: committed when the block ends, rolled back when it raises.
    IMMEDIATE (the default) takes the write lock at once, so two writers never deadlock on an
    upgrade from a read."""
    db.execute(f"BEGIN {mode}")
    try:
        yield db
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
