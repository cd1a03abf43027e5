"""The durable extraction queue (SQLite `queue.db` in the data dir) and the ingestion windows.

Tables:
- `seen` — every (scope, conversation, turn id) ever ingested: duplicate delivery adds nothing;
- `windows` — per conversation, the turns not yet closed into a chunk (plus the overlap tail of
  the last chunk), so chunks of ~N tokens form across many small exchanges;
- `chunks` — the queue: `queued → running → done`, or back to `queued` with a later `next_at`
  after a failure, or `dead` after the last attempt (kept with the reason, visible in status).

Dropping a scope (`drop_scope`, for "forget everything of this chat") deletes its windows and
chunks at once, except a chunk the worker is extracting at that moment: that one becomes `dropped`
(its text erased) and its row disappears when the worker reports back (`done`, `retry`, `postpone`
or `kill` on it delete it instead of recording anything). Until then `in_flight(scope)` counts it,
so the caller can wait (`wait_settled`) before deleting the memories that chunk may have written.
The same four calls on an id that is not in the queue at all do nothing.

Invariants: a chunk id is deterministic (tap.ingest.chunker.chunk_id), inserted once (`INSERT OR IGNORE`);
every write is one SQLite transaction (WAL, synchronous=FULL), so a crash or `kill -9` leaves each
acknowledged turn either in a window or in a queued chunk; chunks left `running` by a crash go back
to `queued` on open (`dropped` ones are deleted). Memory use is bounded: chunks are claimed one at
a time.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec

from tap.ingest.chunker import Chunk, Turn, chunk_turns
from tap.records import Source, SourceTurn
from tap.sqlite import Step, connect, migrate, transaction
from tap.tokens import count_turn_tokens

_MIGRATIONS: tuple[Step, ...] = (
    (  # 1: turns seen, open windows, chunks
        "CREATE TABLE IF NOT EXISTS seen (scope TEXT NOT NULL, conversation TEXT NOT NULL, turn_id TEXT NOT NULL, "
        "PRIMARY KEY (scope, conversation, turn_id)) WITHOUT ROWID",
        "CREATE TABLE IF NOT EXISTS windows (scope TEXT NOT NULL, conversation TEXT NOT NULL, source TEXT NOT NULL, "
        "turns BLOB NOT NULL, covered INTEGER NOT NULL, updated_at REAL NOT NULL, PRIMARY KEY (scope, conversation))",
        "CREATE TABLE IF NOT EXISTS chunks (id TEXT PRIMARY KEY, scope TEXT NOT NULL, conversation TEXT NOT NULL, "
        "source TEXT NOT NULL, payload BLOB NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, "
        "next_at REAL NOT NULL, last_error TEXT NOT NULL DEFAULT '', outcome TEXT NOT NULL DEFAULT '', "
        "created_at REAL NOT NULL, updated_at REAL NOT NULL)",
        "CREATE INDEX IF NOT EXISTS chunks_ready ON chunks (state, next_at)",
        "CREATE INDEX IF NOT EXISTS chunks_claim ON chunks (state, created_at, id)",
    ),
)
"""The queue's tables in queue.db (tap.sqlite.migrate: steps are appended, never edited)."""


class QueuedChunk(msgspec.Struct, kw_only=True):
    """A claimed chunk and how many times it was tried before."""

    chunk: Chunk
    attempts: int


class ChunkQueue:
    """Windows and chunks in SQLite; safe to share between threads of one process."""

    def __init__(
        self,
        path: Path,
        *,
        chunk_tokens: int = 500,
        overlap_tokens: int = 100,
        now: Callable[[], float] = time.time,
        read_only: bool = False,
    ) -> None:
        """`read_only`: only look (`tap status` without a server): no schema, no recovery of the
        chunks a worker was extracting (one may be, in another process), no writes."""
        self.path = path
        self.chunk_tokens = chunk_tokens
        self.overlap_tokens = overlap_tokens
        self._now = now
        self._lock = threading.RLock()
        self._db = connect(path, synchronous="FULL")
        if read_only:
            self._db.execute("PRAGMA query_only=ON")
            return
        self._db.execute("PRAGMA secure_delete=ON")  # forgotten text is overwritten, not left in free pages
        migrate(self._db, "queue", _MIGRATIONS)
        self._db.execute("DELETE FROM chunks WHERE state = 'dropped'")
        self.release_running()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock, transaction(self._db) as db:
            yield db

    # -- ingestion ------------------------------------------------------------------------------

    def _chunks(self, turns: list[Turn], scope: str, conversation: str, source: Source) -> list[Chunk]:
        """A window's turns cut into chunks of this queue's size and overlap."""
        return chunk_turns(
            turns,
            scope=scope,
            conversation=conversation,
            source=source,
            chunk_tokens=self.chunk_tokens,
            overlap_tokens=self.overlap_tokens,
        )

    def add_turns(self, scope: str, conversation: str, source: Source, turns: list[Turn]) -> int:
        """Record new turns (duplicates ignored), close full windows into chunks; returns new turns."""
        with self._tx() as db:
            fresh = [t for t in turns if self._first_time(db, scope, conversation, t.id)]
            if not fresh:
                return 0
            window, covered = self._window(db, scope, conversation)
            window += fresh
            windows = self._chunks(window, scope, conversation, source)
            for chunk in windows[:-1]:
                self._enqueue(db, chunk)
            last = windows[-1]
            kept_covered = self._covered_in_last(windows, covered)
            self._save_window(db, scope, conversation, source, last.turns, kept_covered)
            return len(fresh)

    @staticmethod
    def _first_time(db: sqlite3.Connection, scope: str, conversation: str, turn_id: str) -> bool:
        cur = db.execute("INSERT OR IGNORE INTO seen VALUES (?, ?, ?)", (scope, conversation, turn_id))
        return cur.rowcount == 1

    @staticmethod
    def _window(db: sqlite3.Connection, scope: str, conversation: str) -> tuple[list[Turn], int]:
        row = db.execute(
            "SELECT turns, covered FROM windows WHERE scope = ? AND conversation = ?", (scope, conversation)
        ).fetchone()
        if row is None:
            return [], 0
        return msgspec.json.decode(row[0], type=list[Turn]), int(row[1])

    @staticmethod
    def _covered_in_last(windows: list[Chunk], covered: int) -> int:
        """How many leading turns of the last window are already in an emitted chunk."""
        if len(windows) == 1:
            return min(covered, len(windows[0].turns))
        emitted = {t.id for chunk in windows[:-1] for t in chunk.turns}
        count = 0
        for turn in windows[-1].turns:
            if turn.id not in emitted:
                break
            count += 1
        return count

    def _save_window(
        self, db: sqlite3.Connection, scope: str, conversation: str, source: Source, turns: list[Turn], covered: int
    ) -> None:
        db.execute(
            "INSERT INTO windows VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (scope, conversation) DO UPDATE SET "
            "source = excluded.source, turns = excluded.turns, covered = excluded.covered, "
            "updated_at = excluded.updated_at",
            (scope, conversation, source, msgspec.json.encode(turns), covered, self._now()),
        )

    def _enqueue(self, db: sqlite3.Connection, chunk: Chunk) -> None:
        now = self._now()
        db.execute(
            "INSERT OR IGNORE INTO chunks (id, scope, conversation, source, payload, state, next_at, created_at, "
            "updated_at) VALUES (?, ?, ?, ?, ?, 'queued', ?, ?, ?)",
            (chunk.id, chunk.scope, chunk.conversation, chunk.source, msgspec.json.encode(chunk), now, now, now),
        )

    def flush(self, *, idle_s: float = 0.0, scope: str | None = None, conversation: str | None = None) -> int:
        """Close windows idle for `idle_s` seconds (all when 0) into chunks; returns chunks queued.

        `scope` and `conversation` limit it to one conversation's window (an agent hook's Stop)."""
        cutoff = self._now() - idle_s
        query = "SELECT scope, conversation, source, turns, covered FROM windows WHERE updated_at <= ?"
        args: tuple[object, ...] = (cutoff,)
        if scope is not None and conversation is not None:
            query, args = query + " AND scope = ? AND conversation = ?", (cutoff, scope, conversation)
        with self._tx() as db:
            rows = db.execute(query, args).fetchall()
            queued = 0
            for scope, conversation, source, blob, covered in rows:
                turns = msgspec.json.decode(blob, type=list[Turn])
                if covered >= len(turns):
                    continue
                for chunk in self._chunks(turns, scope, conversation, source):
                    self._enqueue(db, chunk)
                    queued += 1
                tail = self._overlap_tail(turns)
                self._save_window(db, scope, conversation, source, tail, len(tail))
            return queued

    def _overlap_tail(self, turns: list[Turn]) -> list[Turn]:
        tail: list[Turn] = []
        used = 0
        for turn in reversed(turns):
            cost = count_turn_tokens(turn.text) + 8
            if used + cost > self.overlap_tokens:
                break
            tail.insert(0, turn)
            used += cost
        return tail

    # -- the queue ------------------------------------------------------------------------------

    def release_running(self) -> int:
        """Put every chunk left `running` back in the queue (its extraction was cut short: a crash,
        or Ctrl-C in the one process that works this queue); how many. Done at every start."""
        with self._tx() as db:
            return db.execute("UPDATE chunks SET state = 'queued' WHERE state = 'running'").rowcount

    def ready(self, at_most: int) -> int:
        """How many chunks are ready to claim now, counting no further than `at_most` (an index
        range: cheap however long the queue)."""
        with self._lock:
            (count,) = self._db.execute(
                "SELECT count(*) FROM (SELECT 1 FROM chunks WHERE state = 'queued' AND next_at <= ? LIMIT ?)",
                (self._now(), at_most),
            ).fetchone()
        return int(count)

    def claim(self) -> QueuedChunk | None:
        """Take the oldest ready chunk (state → running), or None."""
        with self._tx() as db:
            row = db.execute(
                "SELECT id, payload, attempts FROM chunks WHERE state = 'queued' AND next_at <= ? "
                "ORDER BY created_at, id LIMIT 1",
                (self._now(),),
            ).fetchone()
            if row is None:
                return None
            db.execute("UPDATE chunks SET state = 'running', updated_at = ? WHERE id = ?", (self._now(), row[0]))
        return QueuedChunk(chunk=msgspec.json.decode(row[1], type=Chunk), attempts=int(row[2]))

    @staticmethod
    def _settle_dropped(db: sqlite3.Connection, chunk_id: str) -> bool:
        """Delete the chunk if its scope was dropped while it ran; True when it was."""
        return db.execute("DELETE FROM chunks WHERE id = ? AND state = 'dropped'", (chunk_id,)).rowcount == 1

    def done(self, chunk_id: str, outcome: str) -> None:
        """Mark a chunk processed, with a one-line outcome."""
        with self._tx() as db:
            if self._settle_dropped(db, chunk_id):
                return
            db.execute(
                "UPDATE chunks SET state = 'done', outcome = ?, last_error = '', updated_at = ? WHERE id = ?",
                (outcome, self._now(), chunk_id),
            )

    def retry(self, chunk_id: str, error: str, *, delay_s: float, max_attempts: int) -> bool:
        """Record a failed attempt: back to the queue after `delay_s`, or dead; True when dead."""
        with self._tx() as db:
            row = db.execute("SELECT attempts FROM chunks WHERE id = ?", (chunk_id,)).fetchone()
            if row is None or self._settle_dropped(db, chunk_id):
                return False
            attempts = int(row[0]) + 1
            dead = attempts >= max_attempts
            db.execute(
                "UPDATE chunks SET state = ?, attempts = ?, next_at = ?, last_error = ?, updated_at = ? WHERE id = ?",
                ("dead" if dead else "queued", attempts, self._now() + delay_s, error[:2000], self._now(), chunk_id),
            )
            return dead

    def postpone(self, chunk_id: str, until: float, reason: str) -> None:
        """Put a chunk back without counting an attempt (e.g. the daily budget is spent)."""
        with self._tx() as db:
            if self._settle_dropped(db, chunk_id):
                return
            db.execute(
                "UPDATE chunks SET state = 'queued', next_at = ?, last_error = ?, updated_at = ? WHERE id = ?",
                (until, reason, self._now(), chunk_id),
            )

    def kill(self, chunk_id: str, error: str) -> None:
        """Dead-letter a chunk at once (a failure retrying cannot fix)."""
        with self._tx() as db:
            if self._settle_dropped(db, chunk_id):
                return
            db.execute(
                "UPDATE chunks SET state = 'dead', attempts = attempts + 1, last_error = ?, updated_at = ? "
                "WHERE id = ?",
                (error[:2000], self._now(), chunk_id),
            )

    def requeue_dead(self) -> int:
        """Give every dead letter a fresh start; returns how many."""
        with self._tx() as db:
            cur = db.execute(
                "UPDATE chunks SET state = 'queued', attempts = 0, next_at = ?, updated_at = ? WHERE state = 'dead'",
                (self._now(), self._now()),
            )
            return cur.rowcount

    # -- forgetting a scope -----------------------------------------------------------------------

    def drop_scope(self, scope: str) -> int:
        """Delete a scope's open windows and its chunks, whatever their state; returns how many.

        A chunk being extracted right now is marked `dropped` instead (see the module docstring).
        The `seen` turn ids stay, so a client that sends the old turns again does not bring them back.
        """
        with self._tx() as db:
            windows = db.execute("DELETE FROM windows WHERE scope = ?", (scope,)).rowcount
            chunks = db.execute("DELETE FROM chunks WHERE scope = ? AND state != 'running'", (scope,)).rowcount
            running = db.execute(
                "UPDATE chunks SET state = 'dropped', payload = x'', updated_at = ? "
                "WHERE scope = ? AND state = 'running'",
                (self._now(), scope),
            ).rowcount
        self._truncate_wal()
        return windows + chunks + running

    def forget_turns(self, scope: str, conversation: str, turn_ids: set[str], *, include_running: bool = False) -> int:
        """Remove these turns from the conversation's open window and from its chunks (a chunk left
        without turns is deleted); returns how many turns were removed. A chunk the worker is
        extracting right now is left alone (its memories can be forgotten once it is done), unless
        the worker itself asks (`include_running`: a user asked, in a chunk it is extracting, to
        forget what an earlier turn of that chunk said)."""
        if not turn_ids or not conversation:
            return 0
        removed = 0
        with self._tx() as db:
            row = db.execute(
                "SELECT turns, covered FROM windows WHERE scope = ? AND conversation = ?", (scope, conversation)
            ).fetchone()
            if row is not None:
                turns = msgspec.json.decode(row[0], type=list[Turn])
                kept = [t for t in turns if t.id not in turn_ids]
                if len(kept) != len(turns):
                    removed += len(turns) - len(kept)
                    covered = sum(1 for t in turns[: int(row[1])] if t.id not in turn_ids)
                    db.execute(
                        "UPDATE windows SET turns = ?, covered = ? WHERE scope = ? AND conversation = ?",
                        (msgspec.json.encode(kept), covered, scope, conversation),
                    )
            chunks = db.execute(
                "SELECT id, payload FROM chunks WHERE scope = ? AND conversation = ? AND state NOT IN (?, 'dropped')",
                (scope, conversation, "" if include_running else "running"),
            ).fetchall()
            for chunk_id, payload in chunks:
                chunk = msgspec.json.decode(payload, type=Chunk)
                kept = [t for t in chunk.turns if t.id not in turn_ids]
                if len(kept) == len(chunk.turns):
                    continue
                removed += len(chunk.turns) - len(kept)
                if kept:
                    slimmer = msgspec.structs.replace(chunk, turns=kept)
                    db.execute("UPDATE chunks SET payload = ? WHERE id = ?", (msgspec.json.encode(slimmer), chunk_id))
                else:
                    db.execute("DELETE FROM chunks WHERE id = ?", (chunk_id,))
        if removed:
            self._truncate_wal()
        return removed

    def source_turns(self, scope: str, conversation: str, turn_ids: set[str]) -> list[SourceTurn]:
        """The turns with these ids still held in the conversation's window or chunks (until
        retention prunes extracted chunks; tap.memories.history.TurnSource)."""
        if not turn_ids or not conversation:
            return []
        with self._lock:
            db = self._db
            rows = db.execute(
                "SELECT turns FROM windows WHERE scope = ? AND conversation = ?", (scope, conversation)
            ).fetchall()
            payloads = db.execute(
                "SELECT payload FROM chunks WHERE scope = ? AND conversation = ? AND state != 'dropped'",
                (scope, conversation),
            ).fetchall()
        turns = [t for (blob,) in rows for t in msgspec.json.decode(blob, type=list[Turn])]
        turns += [t for (blob,) in payloads if blob for t in msgspec.json.decode(blob, type=Chunk).turns]
        found = {t.id: SourceTurn(id=t.id, role=t.role, text=t.text, at=t.timestamp) for t in turns if t.id in turn_ids}
        return list(found.values())

    def prune_done(self, before: float) -> int:
        """Delete chunks extracted before `before` (their text is no longer needed: turn ids stay in
        `seen`, so the same turns are never taken in again); returns how many."""
        with self._tx() as db:
            deleted = int(db.execute("DELETE FROM chunks WHERE state = 'done' AND updated_at < ?", (before,)).rowcount)
        if deleted:
            self._truncate_wal()
        return deleted

    def _truncate_wal(self) -> None:
        with self._lock:
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def in_flight(self, scope: str) -> int:
        """Chunks of a dropped scope that the worker is still extracting."""
        with self._lock:
            row = self._db.execute("SELECT count(*) FROM chunks WHERE scope = ? AND state = 'dropped'", (scope,))
            return int(row.fetchone()[0])

    def wait_settled(self, scope: str, timeout_s: float, *, poll_s: float = 0.05) -> bool:
        """Wait (blocking) until no chunk of a dropped scope is in flight; False on timeout."""
        deadline = time.monotonic() + timeout_s
        while self.in_flight(scope):
            if time.monotonic() >= deadline:
                return False
            time.sleep(poll_s)
        return True

    # -- reporting ------------------------------------------------------------------------------

    def counts(self) -> dict[str, int]:
        """Chunks by state, plus turns waiting in open windows."""
        with self._lock:
            out = {state: 0 for state in ("queued", "running", "done", "dead")}
            for state, n in self._db.execute("SELECT state, count(*) FROM chunks GROUP BY state"):
                key = "running" if state == "dropped" else state  # still being extracted
                out[key] = out.get(key, 0) + int(n)
            # counted inside SQLite: decoding every window in Python took up to 0.8 s with thousands open
            (open_turns,) = self._db.execute(
                "SELECT coalesce(sum(max(0, json_array_length(CAST(turns AS TEXT)) - covered)), 0) FROM windows"
            ).fetchone()
            out["turns_waiting"] = int(open_turns)
            return out

    def dead_letters(self, limit: int = 20) -> list[dict[str, Any]]:
        """The latest dead chunks with their reason."""
        with self._lock:
            rows = self._db.execute(
                "SELECT id, scope, conversation, attempts, last_error, updated_at FROM chunks WHERE state = 'dead' "
                "ORDER BY updated_at DESC LIMIT ?",
                (limit,),
            ).fetchall()
        keys = ("id", "scope", "conversation", "attempts", "error", "updated_at")
        return [dict(zip(keys, row, strict=True)) for row in rows]

    def next_wakeup(self) -> float | None:
        """When the next postponed chunk becomes ready (None when none waits)."""
        with self._lock:
            row = self._db.execute("SELECT min(next_at) FROM chunks WHERE state = 'queued'").fetchone()
        return float(row[0]) if row and row[0] is not None else None

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
