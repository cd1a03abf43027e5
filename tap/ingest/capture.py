"""Capture: one completed exchange → the durable turn log → the ingestion entry point.

The interception core (tap.intercept.core, for the proxy, the Telegram bridge and the mitmproxy addon)
builds an `Exchange` once the response has ended — completely, with an upstream error, or because
the client went away — and hands it to `Capture.record`, which runs in the background: the
response to the client never waits for it.

An exchange is a human turn and its reply, or (an agent-loop step) only the assistant's reply:
a step of tool results is never recorded as a new human turn. Telegram also hands over the
earlier unanswered messages its reply folds in (`earlier`).

What is kept of a very long turn is its first MAX_KEPT_CHARS characters or so (`Exchange.bounded`):
extraction reads far less of it.

Invariants: the turn log (SQLite `turnlog.db` in the data dir) gets the exchange before ingestion
sees it, so a crash between the two loses nothing that the log cannot replay; API keys are
never part of an exchange; turn ids are stable for a retried request, so duplicate delivery is
harmless downstream. The same database keeps the conversation-continuity keys
(tap.intercept.conversations.ContinuityStore), bounded to `MAX_CONTINUITY` rows, so a restart keeps chats whole.

Privacy: what is written is scrubbed first (tap.scrub: `<private>` spans and secrets never reach
the file); exchanges older than `[data] retention_days` are pruned (tap.ingest.retention); forgetting a
memory deletes the exchanges its source turns came from (`forget_turns`), and forgetting a scope
deletes all of the scope's (`forget_scope`). Deleted rows are overwritten (`secure_delete`) and
the write-ahead log is truncated after a forget, so the text does not linger in the file.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import msgspec

from tap.records import IngestEvent, Message, Source, SourceTurn
from tap.runtime.diskspace import SpaceWatch, out_of_space
from tap.runtime.repeatlog import RepeatLog
from tap.scrub import scrub
from tap.sqlite import Step, connect, migrate, transaction

log = logging.getLogger(__name__)
MAX_CONTINUITY = 200_000
_PRUNE_EVERY = 1_000
RETRY_S = 5.0
MAX_WAITING = 1_000
MAX_WAITING_CHARS = 64_000_000
MAX_KEPT_CHARS = 64_000

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

    def bounded(self) -> Exchange:
        """A copy whose texts are at most about MAX_KEPT_CHARS each: what extraction reads of a turn
        is far less (tap.ingest.chunker.prepare_turns), and a huge paste kept whole would fill the
        data dir and, while waiting to be written, the memory."""
        return msgspec.structs.replace(
            self,
            user_text=_bounded(self.user_text),
            reply_text=_bounded(self.reply_text),
            earlier=[msgspec.structs.replace(m, content=_bounded(m.content)) for m in self.earlier],
        )

    def scrubbed(self) -> Exchange:
        """A copy with every text scrubbed (private spans and secrets removed)."""
        return msgspec.structs.replace(
            self,
            user_text=scrub(self.user_text),
            reply_text=scrub(self.reply_text),
            error=scrub(self.error),
            earlier=[msgspec.structs.replace(m, content=scrub(m.content)) for m in self.earlier],
        )

    def turn_ids(self) -> set[str]:
        """The ids of every turn this exchange holds."""
        ids = {self.user_turn_id, self.reply_turn_id, *(m.id for m in self.earlier)}
        ids.discard("")
        return ids


def _bounded(text: str) -> str:
    """The text cut after MAX_KEPT_CHARS, at a space or line break (so no token, a secret included,
    is cut in two and left unrecognised by the scrubber), with a note of how much went."""
    if len(text) <= MAX_KEPT_CHARS:
        return text
    cut = max(
        text.rfind(" ", MAX_KEPT_CHARS - 4096, MAX_KEPT_CHARS), text.rfind("\n", MAX_KEPT_CHARS - 4096, MAX_KEPT_CHARS)
    )
    cut = cut if cut > 0 else MAX_KEPT_CHARS
    return f"{text[:cut]} [… {len(text) - cut:,} more characters not kept]"


_MIGRATIONS: tuple[Step, ...] = (
    (  # 1: exchanges, and the message-prefix continuity of conversations
        "CREATE TABLE IF NOT EXISTS exchanges (seq INTEGER PRIMARY KEY AUTOINCREMENT, scope TEXT NOT NULL, "
        "conversation TEXT NOT NULL, user_turn_id TEXT NOT NULL, recorded_at REAL NOT NULL, record BLOB NOT NULL)",
        "CREATE INDEX IF NOT EXISTS exchanges_conv ON exchanges (scope, conversation)",
        "CREATE TABLE IF NOT EXISTS continuity (key TEXT PRIMARY KEY, conversation TEXT NOT NULL, "
        "seen_at REAL NOT NULL)",
        "CREATE INDEX IF NOT EXISTS continuity_seen ON continuity (seen_at)",
    ),
)
"""The turn log's tables in turnlog.db (tap.sqlite.migrate: steps are appended, never edited)."""


class TurnLog:
    """Append-only SQLite log of captured exchanges (thread-safe)."""

    name = "turn log"

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        """`read_only`: only look (`tap memories show` without a server): no schema, no writes."""
        self.path = path
        self._lock = threading.Lock()
        self._db = connect(path)
        self._puts = 0
        if read_only:
            self._db.execute("PRAGMA query_only=ON")
            return
        self._db.execute("PRAGMA secure_delete=ON")
        migrate(self._db, "turnlog", _MIGRATIONS)

    def append(self, exchange: Exchange) -> int:
        """Store the exchange durably, scrubbed; returns its sequence number."""
        exchange = exchange.scrubbed()
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
        return [_decode(row[0]) for row in rows]

    def continuity_get(self, key: str) -> str | None:
        """The conversation remembered for a continuity key (tap.intercept.conversations.ContinuityStore)."""
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

    def exchange_turns(self, scope: str, conversation: str, turn_ids: set[str]) -> dict[str, str]:
        """Every turn of the exchanges that hold any of these turns (a user turn and the reply to it,
        and what Telegram folded in), these ids included: id → text ("" when the log has none)."""
        related = dict.fromkeys(turn_ids, "")
        if not turn_ids or not conversation:
            return related
        with self._lock:
            rows = self._db.execute(
                "SELECT record FROM exchanges WHERE scope = ? AND conversation = ?", (scope, conversation)
            ).fetchall()
        for (blob,) in rows:
            exchange = _decode(blob)
            if exchange.turn_ids() & turn_ids:
                texts = {exchange.user_turn_id: exchange.user_text, exchange.reply_turn_id: exchange.reply_text}
                texts |= {m.id: m.content for m in exchange.earlier}
                related |= {i: text for i, text in texts.items() if i}
        return related

    def source_turns(self, scope: str, conversation: str, turn_ids: set[str]) -> list[SourceTurn]:
        """The turns with these ids that the log still holds (tap.memories.history.TurnSource)."""
        if not turn_ids or not conversation:
            return []
        with self._lock:
            rows = self._db.execute(
                "SELECT record FROM exchanges WHERE scope = ? AND conversation = ?", (scope, conversation)
            ).fetchall()
        found: dict[str, SourceTurn] = {}
        for (blob,) in rows:
            exchange = _decode(blob)
            turns = [SourceTurn(id=m.id, role=m.role, text=m.content, at=m.timestamp) for m in exchange.earlier]
            turns.append(
                SourceTurn(id=exchange.user_turn_id, role="user", text=exchange.user_text, at=exchange.started_at)
            )
            turns.append(
                SourceTurn(
                    id=exchange.reply_turn_id, role="assistant", text=exchange.reply_text, at=exchange.finished_at
                )
            )
            found.update((t.id, t) for t in turns if t.id in turn_ids and t.text.strip())
        return list(found.values())

    def forget_turns(self, scope: str, conversation: str, turn_ids: set[str]) -> int:
        """Delete the exchanges of a conversation that hold any of these turns; returns how many."""
        if not turn_ids or not conversation:
            return 0
        with self._lock:
            rows = self._db.execute(
                "SELECT seq, record FROM exchanges WHERE scope = ? AND conversation = ?", (scope, conversation)
            ).fetchall()
            doomed = [seq for seq, blob in rows if _decode(blob).turn_ids() & turn_ids]
            for seq in doomed:
                self._db.execute("DELETE FROM exchanges WHERE seq = ?", (seq,))
            if doomed:
                self._truncate_wal()
            return len(doomed)

    def forget_scope(self, scope: str) -> int:
        """Delete every exchange of a scope, and the continuity keys of its conversations."""
        with self._lock:
            conversations = [
                row[0]
                for row in self._db.execute("SELECT DISTINCT conversation FROM exchanges WHERE scope = ?", (scope,))
            ]
            with transaction(self._db):
                deleted = self._db.execute("DELETE FROM exchanges WHERE scope = ?", (scope,)).rowcount
                for conversation in conversations:
                    self._db.execute("DELETE FROM continuity WHERE conversation = ?", (conversation,))
            self._truncate_wal()
            return int(deleted)

    def prune(self, before: float) -> int:
        """Delete the exchanges recorded before `before` (POSIX seconds); returns how many."""
        with self._lock:
            deleted = int(self._db.execute("DELETE FROM exchanges WHERE recorded_at < ?", (before,)).rowcount)
            if deleted:
                self._truncate_wal()
            return deleted

    def _truncate_wal(self) -> None:
        """Fold the write-ahead log into the file and empty it (deleted text must not linger there)."""
        self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def count(self) -> int:
        """How many exchanges were captured."""
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM exchanges").fetchone()[0])

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()


def _decode(blob: bytes) -> Exchange:
    return msgspec.json.decode(blob, type=Exchange)


class Capture:
    """Records exchanges in the turn log and hands them to ingestion, off the hot path.

    An exchange that cannot be written (a full disk, a failing database) is kept in memory, in
    order, and written again by `retry` (every RETRY_S while `tap serve` runs, and before the next
    exchange) until it goes through: nothing is lost while the outage lasts, up to MAX_WAITING
    exchanges or MAX_WAITING_CHARS of text; past that the oldest are dropped and counted as lost.
    While captures fail, `failing` says why (the proxy flags each request with
    `x-tap-degraded: capture-failed`, health is degraded) until everything waiting is written.
    """

    def __init__(self, turn_log: TurnLog, ingest: Ingest | None = None, *, space: SpaceWatch | None = None) -> None:
        self.turn_log = turn_log
        self._ingest = ingest
        self._space = space
        self.captured = 0
        self.failed = 0
        self.lost = 0
        self.failing = ""
        self._waiting: deque[_Waiting] = deque()
        self._waiting_chars = 0
        self._writing = asyncio.Lock()
        self._log = RepeatLog(log)

    async def record(self, exchange: Exchange) -> None:
        """Log the exchange, then ingest it; failures are logged, counted and retried, never raised."""
        self._keep(_Waiting(exchange.bounded()))
        await self.retry()

    async def retry(self) -> None:
        """Write what waits, oldest first, until one fails (it stays first in line)."""
        async with self._writing:
            while self._waiting:
                waiting = self._waiting[0]
                try:
                    await self._write(waiting)
                except Exception as exc:
                    self._failed(waiting.exchange, exc)
                    return
                self._waiting.popleft()
                self._waiting_chars -= waiting.chars
            if self.failing:
                self._log.recovered("capture", "captures are written again")
            self.failing = ""

    async def keep_retrying(self, stop: asyncio.Event) -> None:
        """While `tap serve` runs: write what waits every RETRY_S (space came back, say)."""
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), RETRY_S)
            except TimeoutError:
                if self._waiting:
                    await self.retry()

    async def _write(self, waiting: _Waiting) -> None:
        if not waiting.logged:
            await asyncio.to_thread(self.turn_log.append, waiting.exchange)
            waiting.logged = True
            self.captured += 1
        event = waiting.exchange.to_event()
        if self._ingest is not None and event.messages:
            await self._ingest(event)

    def _keep(self, waiting: _Waiting) -> None:
        self._waiting.append(waiting)
        self._waiting_chars += waiting.chars
        # bounded while captures fail (in-flight ones, however large, only wait for the one before)
        while (
            self.failing
            and len(self._waiting) > 1
            and (len(self._waiting) > MAX_WAITING or self._waiting_chars > MAX_WAITING_CHARS)
        ):
            dropped = self._waiting.popleft()
            self._waiting_chars -= dropped.chars
            self.lost += 1
            log.error(
                "an exchange of conversation %s was lost: %d exchanges could not be captured and wait "
                "(%s); the oldest goes",
                dropped.exchange.conversation,
                len(self._waiting) + 1,
                self.failing or "capture failing",
            )

    def _failed(self, exchange: Exchange, exc: Exception) -> None:
        self.failed += 1
        full = out_of_space(exc)
        self.failing = ("out of space: " if full else "") + f"{type(exc).__name__}: {exc}"[:300]
        if full and self._space is not None:
            self._space.note(f"out of space: capture failed ({exc})"[:300])
        self._log.failed(
            "capture",
            "capture of an exchange in conversation %s failed (%d waiting, retried every %.0f s)",
            exchange.conversation,
            len(self._waiting),
            RETRY_S,
            exc=exc,
        )

    def status(self) -> dict[str, Any]:
        """Counters for /tap/status."""
        return {
            "captured": self.captured,
            "failed": self.failed,
            "waiting": len(self._waiting),
            "lost": self.lost,
            "failing": self.failing,
        }


class _Waiting:
    """An exchange not fully captured yet: `logged` once the turn log has it (only ingestion left)."""

    __slots__ = ("chars", "exchange", "logged")

    def __init__(self, exchange: Exchange) -> None:
        self.exchange = exchange
        self.logged = False
        self.chars = len(exchange.user_text) + len(exchange.reply_text) + sum(len(m.content) for m in exchange.earlier)
