"""What the hook path remembers between events, in SQLite (`<data dir>/hooks.db`).

Tables:
- `fired`: per (agent, event), when it last fired, how that went, and how often (`tap hooks status`);
- `given`: per session, the memory ids its context already holds (the ledger: a hook's context
  stays in the transcript, so a memory given once is not given again until compaction or a clear);
- `sessions`: per session, its agent, scope and when it was last seen (for status and pruning);
- `started`: the sessions that were given their start digest (at SessionStart, or with the first
  prompt of a session that had none);
- `pending`: Codex prompts waiting for their turn's Stop (Codex's transcript is not Claude Code's
  format, so a Codex exchange is captured from the hook payloads: the prompt now, the reply at Stop).
The `files` table of the same file belongs to the transcript offsets (bridges.logtail.progress_db).

Both ways of running a hook use it: `tap serve` (one process, many threads) and a standalone
`tap hook` process (one per event), so every write is its own transaction (WAL) and one lock
serialises a process's threads. Rows of sessions not seen for PRUNE_AFTER_S are deleted at session
start, so the file does not grow without bound. Standard library only (the fast command path
records failures here).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from tap.sqlite import Step, connect, migrate, transaction

STATE_FILE = "hooks.db"
PRUNE_AFTER_S = 30 * 86400.0

_MIGRATIONS: tuple[Step, ...] = (
    (  # 1: hooks fired, memories given per session, sessions, prompts waiting for their Stop
        "CREATE TABLE IF NOT EXISTS fired (agent TEXT NOT NULL, event TEXT NOT NULL, at REAL NOT NULL, "
        "outcome TEXT NOT NULL, count INTEGER NOT NULL, PRIMARY KEY (agent, event)) WITHOUT ROWID",
        "CREATE TABLE IF NOT EXISTS given (session TEXT NOT NULL, memory_id TEXT NOT NULL, at REAL NOT NULL, "
        "PRIMARY KEY (session, memory_id)) WITHOUT ROWID",
        "CREATE TABLE IF NOT EXISTS sessions (session TEXT PRIMARY KEY, agent TEXT NOT NULL, scope TEXT NOT NULL, "
        "cwd TEXT NOT NULL, seen_at REAL NOT NULL)",
        "CREATE TABLE IF NOT EXISTS pending (session TEXT NOT NULL, turn_id TEXT NOT NULL, prompt TEXT NOT NULL, "
        "at REAL NOT NULL, PRIMARY KEY (session, turn_id)) WITHOUT ROWID",
    ),
    (  # 2: the sessions given their start digest
        "CREATE TABLE IF NOT EXISTS started (session TEXT PRIMARY KEY, at REAL NOT NULL) WITHOUT ROWID",
    ),
)
"""The hook state's tables in hooks.db (tap.sqlite.migrate: steps are appended, never edited)."""
_SESSION_TABLES = ("given", "pending", "started", "sessions")


class Fired(NamedTuple):
    """The last time one hook fired."""

    agent: str
    event: str
    at: float
    outcome: str
    times: int


class HookState:
    """The hooks.db tables (see the module docstring); safe to share between threads."""

    name = "agent hook state"

    def __init__(self, path: Path, *, now: Callable[[], float] = time.time) -> None:
        self.path = path
        self._now = now
        self._lock = threading.Lock()
        self._db = connect(path)
        migrate(self._db, "hooks", _MIGRATIONS)

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock, transaction(self._db) as db:
            yield db

    def fired(self, agent: str, event: str, outcome: str) -> None:
        """Record that a hook fired now, and how it went."""
        with self._lock:
            self._db.execute(
                "INSERT INTO fired VALUES (?, ?, ?, ?, 1) ON CONFLICT (agent, event) DO UPDATE SET "
                "at = excluded.at, outcome = excluded.outcome, count = count + 1",
                (agent, event, self._now(), outcome[:300]),
            )

    def last_fired(self) -> list[Fired]:
        """Every hook that ever fired, most recent first."""
        with self._lock:
            rows = self._db.execute("SELECT agent, event, at, outcome, count FROM fired ORDER BY at DESC").fetchall()
        return [Fired(str(a), str(e), float(t), str(o), int(c)) for a, e, t, o, c in rows]

    # -- the ledger ------------------------------------------------------------------------------

    def given(self, session: str) -> frozenset[str]:
        """The memory ids already given to `session`."""
        with self._lock:
            rows = self._db.execute("SELECT memory_id FROM given WHERE session = ?", (session,)).fetchall()
        return frozenset(str(r[0]) for r in rows)

    def add_given(self, session: str, ids: Iterable[str]) -> None:
        """Note that `ids` were given to `session`."""
        at = self._now()
        with self._lock:
            self._db.executemany(
                "INSERT OR IGNORE INTO given VALUES (?, ?, ?)", [(session, memory_id, at) for memory_id in ids]
            )

    def reset_given(self, session: str) -> None:
        """Forget what `session` was given (its context was compacted or cleared)."""
        with self._lock:
            self._db.execute("DELETE FROM given WHERE session = ?", (session,))

    # -- sessions and Codex prompts ----------------------------------------------------------------

    def seen(self, session: str, agent: str, scope: str, cwd: str) -> None:
        """Record that a session is active, with its scope."""
        with self._lock:
            self._db.execute(
                "INSERT INTO sessions VALUES (?, ?, ?, ?, ?) ON CONFLICT (session) DO UPDATE SET "
                "agent = excluded.agent, scope = excluded.scope, cwd = excluded.cwd, seen_at = excluded.seen_at",
                (session, agent, scope, cwd, self._now()),
            )

    def mark_started(self, session: str) -> None:
        """Note that `session` was given its start digest."""
        with self._lock:
            self._db.execute("INSERT OR IGNORE INTO started VALUES (?, ?)", (session, self._now()))

    def has_started(self, session: str) -> bool:
        """Whether `session` was given its start digest."""
        with self._lock:
            return self._db.execute("SELECT 1 FROM started WHERE session = ?", (session,)).fetchone() is not None

    def pend(self, session: str, turn_id: str, prompt: str) -> None:
        """Keep a prompt until its turn's Stop."""
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO pending VALUES (?, ?, ?, ?)", (session, turn_id, prompt, self._now())
            )

    def take_pending(self, session: str, turn_id: str) -> str | None:
        """The prompt of a turn (the session's latest when `turn_id` is empty), removed; None if none."""
        with self._tx() as db:
            if turn_id:
                query = "SELECT turn_id, prompt FROM pending WHERE session = ? AND turn_id = ?"
                row = db.execute(query, (session, turn_id)).fetchone()
            else:
                query = "SELECT turn_id, prompt FROM pending WHERE session = ? ORDER BY at DESC LIMIT 1"
                row = db.execute(query, (session,)).fetchone()
            if row is not None:
                db.execute("DELETE FROM pending WHERE session = ? AND turn_id = ?", (session, row[0]))
        return None if row is None else str(row[1])

    def prune(self) -> int:
        """Delete the rows of sessions not seen for PRUNE_AFTER_S; returns how many sessions."""
        cutoff = self._now() - PRUNE_AFTER_S
        with self._tx() as db:
            old = [r[0] for r in db.execute("SELECT session FROM sessions WHERE seen_at < ?", (cutoff,))]
            for table in _SESSION_TABLES:
                db.executemany(f"DELETE FROM {table} WHERE session = ?", [(s,) for s in old])
            db.execute("DELETE FROM pending WHERE at < ?", (cutoff,))
        return len(old)

    def forget_scope(self, scope: str) -> int:
        """Delete every row of the sessions in `scope` (what was given, waiting prompts); returns sessions."""
        with self._tx() as db:
            sessions = [r[0] for r in db.execute("SELECT session FROM sessions WHERE scope = ?", (scope,))]
            for table in _SESSION_TABLES:
                db.executemany(f"DELETE FROM {table} WHERE session = ?", [(s,) for s in sessions])
        return len(sessions)

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
