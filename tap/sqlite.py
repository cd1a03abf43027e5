"""One way to open tap's SQLite files: WAL, usable from worker threads, created with its folder.

Each user of a database still serialises its own access with a lock; WAL lets a reader in one
process (e.g. `tap status`) look while `tap serve` writes.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path


def connect(path: Path, *, synchronous: str = "NORMAL") -> sqlite3.Connection:
    """An autocommit connection in WAL mode (explicit BEGIN for transactions)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA synchronous={synchronous}")
    return db
