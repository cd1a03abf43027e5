"""The spool of a standalone `tap mitm`: captured exchanges waiting for `tap serve` to answer.

A `tap mitm` next to a running server hands each captured exchange to the server's
`POST /tap/ingest` (bridges.mitm.remote). When the server does not answer (stopped, restarting),
`SpooledIngest` keeps the exchange in `<data dir>/mitm-spool.db` (SQLite, its text scrubbed like
the turn log's) and a background task (`SpooledIngest.run`) sends the waiting exchanges, oldest
first, as soon as a server answers again on the data dir (its server record is read again, so a
restart on another port is followed). One log line says the server stopped answering and where
the exchanges wait; one says how many reached it once it is back.

Invariants: an exchange leaves the spool only once a server took it (sending one twice is
harmless: the queue drops turns it already has); while anything waits, new exchanges queue
behind it; an exchange the server
refuses (a 4xx: it can never be ingested) is dropped with a warning (the turn log still has it).
Exchanges still waiting when `tap mitm` stops are taken by the next process that can (`drain_into`:
`tap serve` at start, or a `tap mitm` with its own store); forgetting a scope deletes its waiting
exchanges (`forget_scope`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path

import msgspec

from tap.errors import StoreError
from tap.plural import plural
from tap.records import IngestEvent
from tap.scrub import scrub
from tap.sqlite import connect, transaction

__all__ = ["SPOOL_FILE", "ServerGone", "Spool", "SpooledIngest", "drain_into"]

log = logging.getLogger("tap.mitm")
SPOOL_FILE = "mitm-spool.db"
WAIT_FIRST_S = 0.5
WAIT_MAX_S = 10.0
WAKE_S = 0.5  # how often the sending task looks at `stop` while nothing waits
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS waiting"
    " (seq INTEGER PRIMARY KEY AUTOINCREMENT, scope TEXT NOT NULL, event BLOB NOT NULL)"
)
_decode = msgspec.json.Decoder(IngestEvent).decode


class ServerGone(StoreError):
    """tap serve did not answer (no connection, a timeout, or a 5xx while it stops)."""


class Spool:
    """The waiting exchanges, oldest first (thread-safe)."""

    name = "mitm spool (exchanges waiting for tap serve)"

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db = connect(path)
        self._db.execute("PRAGMA secure_delete=ON")  # a sent or forgotten exchange's text does not linger
        self._db.execute(_SCHEMA)

    def put(self, event: IngestEvent) -> None:
        """Keep an exchange, its text scrubbed (no secret reaches the file)."""
        clean = msgspec.structs.replace(
            event, messages=[msgspec.structs.replace(m, content=scrub(m.content)) for m in event.messages]
        )
        with self._lock:
            self._db.execute(
                "INSERT INTO waiting (scope, event) VALUES (?, ?)", (event.scope, msgspec.json.encode(clean))
            )

    def oldest(self) -> tuple[int, IngestEvent] | None:
        """The exchange that has waited longest, with its place in the spool."""
        with self._lock:
            row = self._db.execute("SELECT seq, event FROM waiting ORDER BY seq LIMIT 1").fetchone()
        return None if row is None else (int(row[0]), _decode(row[1]))

    def remove(self, seq: int) -> None:
        """Drop one exchange (sent, or refused for good)."""
        with self._lock:
            self._db.execute("DELETE FROM waiting WHERE seq = ?", (seq,))

    def count(self) -> int:
        """How many exchanges wait."""
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM waiting").fetchone()[0])

    def forget_scope(self, scope: str) -> int:
        """Delete the scope's waiting exchanges (tap.memories.service.ScopeHolder); how many."""
        with self._lock, transaction(self._db):
            return int(self._db.execute("DELETE FROM waiting WHERE scope = ?", (scope,)).rowcount)

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            self._db.close()


def drain_into(data_dir: Path, ingest: Callable[[IngestEvent], int]) -> int:
    """Hand every exchange a stopped `tap mitm` left waiting to `ingest` (a process that owns the
    store); how many. Nothing to do (and no file made) when there is no spool."""
    path = data_dir / SPOOL_FILE
    if not path.exists():
        return 0
    spool = Spool(path)
    taken = 0
    try:
        while (item := spool.oldest()) is not None:
            ingest(item[1])
            spool.remove(item[0])
            taken += 1
    finally:
        spool.close()
    if taken:
        log.info("took %s a tap mitm had kept while tap serve was away", plural(taken, "waiting exchange"))
    return taken


class SpooledIngest:
    """The ingest step of a standalone `tap mitm` next to a server: `send` to the server, or keep
    the exchange in the spool while it does not answer (see the module docstring). `locate` finds
    the server answering on the data dir now (its URL), or None."""

    def __init__(
        self,
        spool: Spool,
        send: Callable[[IngestEvent], Awaitable[int]],
        locate: Callable[[], Awaitable[str | None]],
        *,
        first_wait_s: float = WAIT_FIRST_S,
        max_wait_s: float = WAIT_MAX_S,
    ) -> None:
        self.spool = spool
        self._send = send
        self._locate = locate
        self._first_wait_s = first_wait_s
        self._max_wait_s = max_wait_s
        self._waiting = asyncio.Event()  # something is in the spool
        self._gone = False  # said that the server stopped answering, not yet that it is back
        self.sent_later = 0

    async def ingest(self, event: IngestEvent) -> int:
        """Send the exchange, or keep it (behind any that wait already); the turns the server queued
        (0 when kept)."""
        if not self._waiting.is_set():
            try:
                return await self._send(event)
            except ServerGone as exc:
                self._went(exc)
        await asyncio.to_thread(self.spool.put, event)
        self._waiting.set()
        return 0

    def _went(self, exc: ServerGone) -> None:
        if not self._gone:
            self._gone = True
            log.warning(
                "%s; captured exchanges wait in %s and go to tap serve when it answers again", exc, self.spool.path
            )

    async def run(self, stop: asyncio.Event) -> None:
        """Send what waits whenever a server answers, until `stop` (what is left stays on disk)."""
        if await asyncio.to_thread(self.spool.count):
            self._waiting.set()  # left by an earlier tap mitm
        pause = self._first_wait_s
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._waiting.wait(), WAKE_S)
            if stop.is_set() or not self._waiting.is_set():
                continue
            if await self._send_waiting():
                pause = self._first_wait_s
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), pause)
            pause = min(pause * 2, self._max_wait_s)

    async def _send_waiting(self) -> bool:
        """Send the waiting exchanges, oldest first; whether the spool is empty now."""
        if await self._locate() is None:
            return False
        while True:
            item = await asyncio.to_thread(self.spool.oldest)
            if item is None:
                self._waiting.clear()  # then look again: one kept meanwhile sets it again
                if not await asyncio.to_thread(self.spool.count):
                    break
                self._waiting.set()
                continue
            seq, event = item
            try:
                await self._send(event)
            except ServerGone as exc:
                self._went(exc)
                return False
            except StoreError as exc:  # refused for good: it can never be ingested
                log.warning("tap serve refused a waiting exchange of conversation %s: %s", event.conversation, exc)
            await asyncio.to_thread(self.spool.remove, seq)
            self.sent_later += 1
        if self._gone:
            self._gone = False
            log.info("tap serve answers again: %s sent from the spool", plural(self.sent_later, "waiting exchange"))
            self.sent_later = 0
        return True
