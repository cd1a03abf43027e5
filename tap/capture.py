"""Capture: one completed exchange → the durable turn log → the ingestion entry point.

The interception core (tap.intercept, for the proxy, the Telegram bridge and the mitmproxy addon)
builds an `Exchange` once the response has ended — completely, with an upstream error, or because
the client went away — and hands it to `Capture.record`, which runs in the background: the
response to the client never waits for it.

An exchange is a human turn and its reply, or (an agent-loop step) only the assistant's reply:
a step of tool results is never recorded as a new human turn. Telegram also hands over the
earlier unanswered messages its reply folds in (`earlier`).

Invariants: the turn log (SQLite `turnlog.db` in the data dir) gets the exchange before ingestion
sees it, so a crash between the two loses nothing that the log cannot replay; API keys are
never part of an exchange; turn ids are stable for a retried request, so duplicate delivery is
harmless downstream. The same database keeps the conversation-continuity keys
(tap.identity.ContinuityStore), bounded to `MAX_CONTINUITY` rows, so a restart keeps chats whole.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import msgspec

from tap.records import IngestEvent, Message, Source
from tap.sqlite import connect

log = logging.getLogger(__name__)
MAX_CONTINUITY = 200_000
_PRUNE_EVERY = 1_000

Ingest = Callable[[IngestEvent], Awaitable[int]]


class Exchange(msgspec.Struct, kw_only=True):
    """One request/response pair as the proxy saw it."""

    scope: str
    conversation: str
    source: Source = "proxy"
    dialect: str
    model: str = ""
    user_turn_id: str
    user_text: str
    user_name: str = ""
    earlier: list[Message] = msgspec.field(default_factory=list)
    reply_turn_id: str = ""
    reply_text: str = ""
    usage: dict[str, int] = msgspec.field(default_factory=dict)
    status: int = 0
    complete: bool = False
    error: str = ""
    started_at: float = 0.0
    finished_at: float = 0.0

    def to_event(self) -> IngestEvent:
        """The ingestion event: earlier folded turns, the user turn (unless this was a tool step)
        and, when there is one, the assistant reply."""
        messages = list(self.earlier)
        if self.user_text.strip():
            messages.append(
                Message(
                    role="user",
                    content=self.user_text,
                    name=self.user_name,
                    id=self.user_turn_id,
                    timestamp=self.started_at,
                )
            )
        if self.reply_text.strip():
            messages.append(
                Message(
                    role="assistant",
                    content=self.reply_text,
                    id=self.reply_turn_id or self.user_turn_id.replace("u-", "a-", 1),
                    timestamp=self.finished_at,
                )
            )
        return IngestEvent(scope=self.scope, conversation=self.conversation, source=self.source, messages=messages)


class TurnLog:
    """Append-only SQLite log of captured exchanges (thread-safe)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db = connect(path)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS exchanges (seq INTEGER PRIMARY KEY AUTOINCREMENT, scope TEXT NOT NULL, "
            "conversation TEXT NOT NULL, user_turn_id TEXT NOT NULL, recorded_at REAL NOT NULL, "
            "record BLOB NOT NULL)"
        )
        self._db.execute("CREATE INDEX IF NOT EXISTS exchanges_conv ON exchanges (scope, conversation)")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS continuity (key TEXT PRIMARY KEY, conversation TEXT NOT NULL, "
            "seen_at REAL NOT NULL)"
        )
        self._db.execute("CREATE INDEX IF NOT EXISTS continuity_seen ON continuity (seen_at)")
        self._puts = 0

    def append(self, exchange: Exchange) -> int:
        """Store the exchange durably; returns its sequence number."""
        with self._lock:
            cur = self._db.execute(
                "INSERT INTO exchanges (scope, conversation, user_turn_id, recorded_at, record) VALUES (?,?,?,?,?)",
                (
                    exchange.scope,
                    exchange.conversation,
                    exchange.user_turn_id,
                    time.time(),
                    msgspec.json.encode(exchange),
                ),
            )
            return int(cur.lastrowid or 0)

    def recent(self, limit: int = 50, *, scope: str | None = None) -> list[Exchange]:
        """The latest exchanges, newest first."""
        query = "SELECT record FROM exchanges" + (" WHERE scope = ?" if scope else "") + " ORDER BY seq DESC LIMIT ?"
        params: tuple[Any, ...] = (scope, limit) if scope else (limit,)
        with self._lock:
            rows = self._db.execute(query, params).fetchall()
        return [msgspec.json.decode(row[0], type=Exchange) for row in rows]

    def continuity_get(self, key: str) -> str | None:
        """The conversation remembered for a continuity key (tap.identity.ContinuityStore)."""
        with self._lock:
            row = self._db.execute("SELECT conversation FROM continuity WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def continuity_put(self, key: str, conversation: str) -> None:
        """Remember a continuity key; the oldest go once there are more than MAX_CONTINUITY."""
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO continuity (key, conversation, seen_at) VALUES (?,?,?)",
                (key, conversation, time.time()),
            )
            self._puts += 1
            if self._puts % _PRUNE_EVERY == 0:
                self._db.execute(
                    "DELETE FROM continuity WHERE key IN (SELECT key FROM continuity ORDER BY seen_at DESC "
                    "LIMIT -1 OFFSET ?)",
                    (MAX_CONTINUITY,),
                )

    def count(self) -> int:
        """How many exchanges were captured."""
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM exchanges").fetchone()[0])

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()


class Capture:
    """Records exchanges in the turn log and hands them to ingestion, off the hot path."""

    def __init__(self, turn_log: TurnLog, ingest: Ingest | None = None) -> None:
        self.turn_log = turn_log
        self._ingest = ingest
        self.captured = 0
        self.failed = 0

    async def record(self, exchange: Exchange) -> None:
        """Log the exchange, then ingest it; failures are logged and counted, never raised."""
        try:
            await asyncio.to_thread(self.turn_log.append, exchange)
            self.captured += 1
            event = exchange.to_event()
            if self._ingest is not None and event.messages:
                await self._ingest(event)
        except Exception:
            self.failed += 1
            log.exception("capture of an exchange in conversation %s failed", exchange.conversation)

    def status(self) -> dict[str, int]:
        """Counters for /tap/status."""
        return {"captured": self.captured, "failed": self.failed}
