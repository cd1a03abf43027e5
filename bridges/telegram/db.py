"""The bridge's own state in SQLite (`<data dir>/telegram.db`): seen updates, refusals, flags, history.

Tables:
- `seen_updates(update_id)`: every update accepted by the webhook; an `update_id` is inserted
  once, so a retried delivery (same id) is recognised and processed once, across restarts too;
  rows older than `SEEN_TTL_S` are pruned (Telegram stops retrying long before);
- `refused(who)`: users/groups that already got the polite refusal (it is sent once);
- `private_next(scope, user_id)`: `/private` was used; the user's next message is not stored;
- `turns`: the chat history per conversation — the user's text and, once answered, the reply,
  both scrubbed (tap.scrub: secrets redacted, `<private>` spans dropped) before they are written.
  A turn is `pending` until its reply reached Telegram; a pending turn is what `/retry` answers,
  and a later answered turn folds earlier pending ones in (they were part of its context).

Invariants: every method is one short transaction on the caller's thread (WAL,
`synchronous=NORMAL`: no fsync per commit, so the event loop is not held up); message text is
stored only for users who are allowed to talk (refused users leave nothing but their id).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tap.scrub import scrub
from tap.sqlite import Step, connect, migrate, transaction

SEEN_TTL_S = 7 * 86400
_PRUNE_EVERY = 500

_MIGRATIONS: tuple[Step, ...] = (
    (  # 1: updates seen, refusals, private-next flags, turns
        "CREATE TABLE IF NOT EXISTS seen_updates (update_id INTEGER PRIMARY KEY, seen_at REAL NOT NULL)",
        "CREATE TABLE IF NOT EXISTS refused (who TEXT PRIMARY KEY, at REAL NOT NULL)",
        "CREATE TABLE IF NOT EXISTS private_next (scope TEXT NOT NULL, user_id INTEGER NOT NULL, at REAL NOT NULL, "
        "PRIMARY KEY (scope, user_id))",
        "CREATE TABLE IF NOT EXISTS turns (id INTEGER PRIMARY KEY AUTOINCREMENT, conversation TEXT NOT NULL, "
        "message_id INTEGER NOT NULL, user_id INTEGER NOT NULL, author TEXT NOT NULL, user_text TEXT NOT NULL, "
        "reply_text TEXT, status TEXT NOT NULL CHECK (status IN ('pending', 'answered')), created_at REAL NOT NULL, "
        "answered_at REAL, UNIQUE (conversation, message_id))",
        "CREATE INDEX IF NOT EXISTS turns_by_conversation ON turns (conversation, id)",
    ),
)
"""The bridge's tables in telegram.db (tap.sqlite.migrate: steps are appended, never edited)."""


@dataclass(frozen=True)
class TurnRow:
    """One stored turn."""

    id: int
    conversation: str
    message_id: int
    user_id: int
    author: str
    user_text: str
    reply_text: str | None
    status: str
    created_at: float

    @property
    def pending(self) -> bool:
        """True until the reply reached Telegram."""
        return self.status == "pending"


_TURN_COLUMNS = "id, conversation, message_id, user_id, author, user_text, reply_text, status, created_at"


class TelegramDB:
    """The bridge's SQLite state; thread-safe (one connection behind a lock)."""

    name = "telegram chat history"

    def __init__(self, path: Path, *, now: Callable[[], float] = time.time) -> None:
        self._now = now
        self._lock = threading.Lock()
        self._db = connect(path)
        migrate(self._db, "telegram", _MIGRATIONS)
        self._inserts = 0
        self.prune()

    def _run(self, sql: str, params: tuple[object, ...] = ()) -> sqlite3.Cursor:
        with self._lock:
            return self._db.execute(sql, params)

    # --- updates, refusals, flags ------------------------------------------------------------

    def first_delivery(self, update_id: int) -> bool:
        """Record an update id; False when it was seen before (a retried delivery)."""
        added = self._run("INSERT OR IGNORE INTO seen_updates VALUES (?, ?)", (update_id, self._now())).rowcount == 1
        self._inserts += 1
        if self._inserts % _PRUNE_EVERY == 0:
            self.prune()
        return added

    def prune(self) -> int:
        """Forget update ids older than SEEN_TTL_S; returns how many."""
        return self._run("DELETE FROM seen_updates WHERE seen_at < ?", (self._now() - SEEN_TTL_S,)).rowcount

    def first_refusal(self, who: str) -> bool:
        """True the first time `who` ("user:<id>" / "chat:<id>") is refused."""
        return self._run("INSERT OR IGNORE INTO refused VALUES (?, ?)", (who, self._now())).rowcount == 1

    def set_private_next(self, scope: str, user_id: int) -> None:
        """Mark the user's next message in `scope` as not to be stored."""
        self._run("INSERT OR REPLACE INTO private_next VALUES (?, ?, ?)", (scope, user_id, self._now()))

    def take_private_next(self, scope: str, user_id: int) -> bool:
        """True (once) when the user asked for their next message not to be stored."""
        sql = "DELETE FROM private_next WHERE scope = ? AND user_id = ?"
        return self._run(sql, (scope, user_id)).rowcount == 1

    # --- history -----------------------------------------------------------------------------

    def add_turn(self, conversation: str, message_id: int, user_id: int, author: str, text: str) -> TurnRow:
        """Store a new pending turn (the same message twice gives the stored one back)."""
        self._run(
            "INSERT OR IGNORE INTO turns (conversation, message_id, user_id, author, user_text, status, created_at) "
            "VALUES (?, ?, ?, ?, ?, 'pending', ?)",
            (conversation, message_id, user_id, author, scrub(text), self._now()),  # no secret is kept
        )
        row = self._run(
            f"SELECT {_TURN_COLUMNS} FROM turns WHERE conversation = ? AND message_id = ?", (conversation, message_id)
        ).fetchone()
        return TurnRow(*row)

    def history(self, conversation: str, *, before: int | None, limit: int) -> list[TurnRow]:
        """The last `limit` turns of a conversation before turn id `before` (all when None), oldest first."""
        if limit <= 0:
            return []
        rows = self._run(
            f"SELECT {_TURN_COLUMNS} FROM turns WHERE conversation = ? AND id < ? ORDER BY id DESC LIMIT ?",
            (conversation, before if before is not None else 2**62, limit),
        ).fetchall()
        return [TurnRow(*row) for row in reversed(rows)]

    def last_pending(self, conversation: str) -> TurnRow | None:
        """The newest turn still waiting for an answer."""
        row = self._run(
            f"SELECT {_TURN_COLUMNS} FROM turns WHERE conversation = ? AND status = 'pending' ORDER BY id DESC LIMIT 1",
            (conversation,),
        ).fetchone()
        return TurnRow(*row) if row else None

    def answer(self, turn_id: int, reply: str) -> list[TurnRow]:
        """Store the reply of a turn; earlier pending turns of its conversation are folded in.

        Returns the turns that were pending before this one (oldest first), which the caller
        ingests together with this exchange.
        """
        with self._lock:
            conversation = self._db.execute("SELECT conversation FROM turns WHERE id = ?", (turn_id,)).fetchone()
            if conversation is None:
                return []
            folded = self._db.execute(
                f"SELECT {_TURN_COLUMNS} FROM turns WHERE conversation = ? AND status = 'pending' AND id < ? "
                "ORDER BY id",
                (conversation[0], turn_id),
            ).fetchall()
            with transaction(self._db, "DEFERRED"):
                self._db.execute(
                    "UPDATE turns SET status = 'answered', answered_at = ? "
                    "WHERE conversation = ? AND status = 'pending' AND id < ?",
                    (self._now(), conversation[0], turn_id),
                )
                self._db.execute(
                    "UPDATE turns SET status = 'answered', reply_text = ?, answered_at = ? WHERE id = ?",
                    (scrub(reply), self._now(), turn_id),
                )
        return [TurnRow(*row) for row in folded]

    def clear_history(self, conversation: str) -> int:
        """Delete a conversation's history (`/forget all`); returns how many turns."""
        return self._run("DELETE FROM turns WHERE conversation = ?", (conversation,)).rowcount

    def forget_scope(self, scope: str) -> int:
        """Everything kept of a chat's scope (`tap memories forget --scope`): its history (a chat's
        conversation id is its scope, bridges.telegram.chats) and its pending `/private` marks."""
        turns = self.clear_history(scope)
        return turns + self._run("DELETE FROM private_next WHERE scope = ?", (scope,)).rowcount

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
