"""Per-file progress of log tailing, in SQLite (`<data dir>/logtail.db`).

A file is known by its identity, (device, inode), not by its path, so a rotated-away (renamed) file
keeps its progress under its new name and a new file at the old path starts from zero. Each record
also keeps a hash of the file's head (the first line, up to HEAD_MAX bytes) and a `mark`, the hash
of the MARK_BYTES bytes just before the committed offset: a reused inode or a file rewritten in
place fails one of the two checks and is read again from the start (the ingestion queue drops the
turns it already has, so nothing is doubled).

Invariants: `offset` always sits just after a newline (or at 0), and is written only after the
events before it were handed to ingestion; each save is one transaction (WAL, synchronous=FULL), so
a crash re-reads at most the last uncommitted batch.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from pathlib import Path
from typing import Any

import msgspec

from tap.sqlite import Step, connect, migrate

__all__ = ["HEAD_MAX", "MARK_BYTES", "FileRecord", "OffsetStore", "head_hash", "head_matches", "head_of", "mark_at"]

HEAD_MAX = 4096
MARK_BYTES = 64

_MIGRATIONS: tuple[Step, ...] = (
    (  # 1: one row per file followed
        "CREATE TABLE IF NOT EXISTS files (dev INTEGER NOT NULL, ino INTEGER NOT NULL, path TEXT NOT NULL, "
        "head_len INTEGER NOT NULL, head_hash TEXT NOT NULL, offset INTEGER NOT NULL, lines INTEGER NOT NULL, "
        "mark TEXT NOT NULL, seen_size INTEGER NOT NULL, seen_mtime INTEGER NOT NULL, format TEXT NOT NULL, "
        "scope TEXT NOT NULL, conversation TEXT NOT NULL, parser_state BLOB NOT NULL, updated_at REAL NOT NULL, "
        "PRIMARY KEY (dev, ino))",
    ),
)
"""The offsets table, in logtail.db and in hooks.db (tap.sqlite.migrate: steps are appended, never edited)."""
_COLUMNS = (
    "dev, ino, path, head_len, head_hash, offset, lines, mark, seen_size, seen_mtime, format, scope, "
    "conversation, parser_state, updated_at"
)


class FileRecord(msgspec.Struct, kw_only=True):
    """What is known about one file: where reading stops, and how to recognise the file."""

    dev: int
    ino: int
    path: str
    head_len: int
    head_hash: str
    offset: int = 0
    lines: int = 0
    mark: str = ""
    seen_size: int = -1
    seen_mtime: int = -1
    format: str
    scope: str
    conversation: str
    parser_state: dict[str, Any] = msgspec.field(default_factory=dict)


def _hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:32]


def head_of(fd: int) -> bytes | None:
    """The file's first line (with its newline), cut at HEAD_MAX bytes; None until it is complete."""
    data = os.pread(fd, HEAD_MAX, 0)
    newline = data.find(b"\n")
    if newline != -1:
        return data[: newline + 1]
    return data if len(data) == HEAD_MAX else None


def head_matches(fd: int, record: FileRecord) -> bool:
    """The first `head_len` bytes are still the ones recorded."""
    return _hash(os.pread(fd, record.head_len, 0)) == record.head_hash


def head_hash(head: bytes) -> str:
    """The stored form of a head."""
    return _hash(head)


def mark_at(fd: int, offset: int) -> str:
    """The hash of the MARK_BYTES bytes before `offset` (empty at the start of the file)."""
    if offset <= 0:
        return ""
    start = max(0, offset - MARK_BYTES)
    return _hash(os.pread(fd, offset - start, start))


class OffsetStore:
    """The `files` table; safe to share between threads of one process, and between processes."""

    name = "log-tail state"

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db = connect(path, synchronous="FULL")
        migrate(self._db, "offsets", _MIGRATIONS)

    def get(self, dev: int, ino: int) -> FileRecord | None:
        """The record of a file identity, if any."""
        with self._lock:
            row = self._db.execute(f"SELECT {_COLUMNS} FROM files WHERE dev = ? AND ino = ?", (dev, ino)).fetchone()
        if row is None:
            return None
        names = [c.strip() for c in _COLUMNS.split(",")]
        data = dict(zip(names, row, strict=True))
        data.pop("updated_at")
        data["parser_state"] = msgspec.json.decode(data["parser_state"])
        return msgspec.convert(data, FileRecord)

    def save(self, record: FileRecord) -> None:
        """Insert or replace a record (one transaction)."""
        values = (
            record.dev,
            record.ino,
            record.path,
            record.head_len,
            record.head_hash,
            record.offset,
            record.lines,
            record.mark,
            record.seen_size,
            record.seen_mtime,
            record.format,
            record.scope,
            record.conversation,
            msgspec.json.encode(record.parser_state),
            time.time(),
        )
        with self._lock:
            self._db.execute(f"INSERT OR REPLACE INTO files ({_COLUMNS}) VALUES ({', '.join('?' * 15)})", values)

    def identities(self) -> list[tuple[int, int, str]]:
        """(device, inode, path) of every tracked file."""
        with self._lock:
            return [(int(d), int(i), str(p)) for d, i, p in self._db.execute("SELECT dev, ino, path FROM files")]

    def forget(self, dev: int, ino: int, path: str) -> bool:
        """Delete a file's record if it still has that path (another process may have moved it on)."""
        with self._lock:
            cur = self._db.execute("DELETE FROM files WHERE dev = ? AND ino = ? AND path = ?", (dev, ino, path))
            return cur.rowcount == 1

    def forget_scope(self, scope: str) -> int:
        """Delete the records of files whose memories go to `scope` (`tap memories forget --scope`).
        A file still there is read again from the start, and the queue drops the turns it already
        has, so nothing forgotten comes back."""
        with self._lock:
            return int(self._db.execute("DELETE FROM files WHERE scope = ?", (scope,)).rowcount)

    def count(self) -> int:
        """How many files are tracked."""
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM files").fetchone()[0])

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
