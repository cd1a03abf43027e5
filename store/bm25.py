"""BM25 over the FTS5 index's own postings, scored in memory: the lexical index's hot path.

FTS5 scores a match with its bm25() function at ~2.5 µs per matching row (a question of common
words matches thousands of memories at 10k: ~8 ms of a ~20 ms recall, the largest cost after the
query embedding). Here each term's postings (rowid, term frequency, row length) are read from
FTS5 once (fts5vocab 'instance' and the docsize table) and kept as arrays; a query then adds up
its terms' contributions with numpy, in well under a millisecond for the same rows.

The scores are FTS5's own, to the bit: the formula of SQLite's fts5 bm25() (k1 = 1.2, b = 0.75,
IDF = log((N - n + 0.5) / (n + 0.5)), at least 1e-6), with N and the average row length read from
the index's averages record (the numbers bm25() reads), a row's length from its docsize record
(every column's tokens, as bm25() counts them), only the `content` column's hits counted (the
weights 0, 0, 1 of the SQL ranking), the terms added up in the query's order. A test holds the
result equal to FTS5's ranking, scores included.

Reading a term's postings costs about what one FTS5 ranking of it does (~3 µs a posting: 60 ms
for a common word at 100k memories), so it never happens on the hot path: a search whose terms
are not all kept yet is ranked by FTS5 as before (`best` returns None), and the missing terms
are read on a background thread with its own connection, at low priority.

Invariants:
- Only rows that hold a term are in its postings, and a term's postings are current: every
  write names the terms of the texts it adds and removes (LexicalIndex tokenizes them with FTS5
  itself), and their postings are dropped, to be read again. A read that a write to one of its
  terms (or to any row, for the scopes) overlapped is thrown away, never installed.
- A row never changes: replacing a memory writes a new row. So a row's length never changes
  either, and its scope is kept per rowid (`scope_of`), set by each write (a deleted row is in
  no postings once its terms are dropped, and a rowid FTS5 gives out again is set anew).
- The caller holds the index's lock (the background reader takes it only to install what it read).
"""

from __future__ import annotations

import logging
import math
import queue
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from tap.priority import lower_thread_priority
from tap.sqlite import connect

log = logging.getLogger(__name__)

K1 = 1.2
B = 0.75
MIN_IDF = 1e-6
POSTINGS_CACHE_MAX = 1_000_000
"""Postings kept in memory across all terms (~24 bytes each), then the cache starts over."""
CONTENT_COLUMN = "content"

_AVERAGES_ROWID = 1  # FTS5 keeps the row count and each column's token total in %_data row 1
_NO_SCOPE = -1
_SCOPES = ""  # the background reader's job that reads every row's scope (no term is empty)

Rows = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]


def read_varint(data: bytes, offset: int) -> tuple[int, int]:
    """One SQLite varint (big-endian 7-bit groups, a 9th byte of 8 bits) at offset; (value, next)."""
    value = 0
    for _ in range(8):
        byte = data[offset]
        offset += 1
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, offset
    return (value << 8) | data[offset], offset + 1


def varint_sum(data: bytes) -> int:
    """The sum of a record of varints (a docsize record: every column's tokens in one row)."""
    total, offset = 0, 0
    while offset < len(data):
        value, offset = read_varint(data, offset)
        total += value
    return total


@dataclass(frozen=True)
class _Postings:
    """One term's rows (ascending), hits in `content` per row, and each row's length in tokens."""

    rows: Rows
    hits: Floats
    lengths: Floats


class TermPostings:
    """Per-term postings of one FTS5 table and the scope of each row (see the module docstring)."""

    def __init__(self, db: sqlite3.Connection, path: Path, lock: threading.Lock, table: str = "memories") -> None:
        self._db = db
        self._path = path
        self._lock = lock  # the index's: held by every caller, and by the reader to install
        self._table = table
        self._terms: dict[str, _Postings] = {}
        self._held = 0
        self._scope_of: npt.NDArray[np.int32] | None = None  # rowid -> scope number, or _NO_SCOPE
        self._scopes: dict[str, int] = {}
        self._wanted: dict[str, bool] = {}  # queued or being read -> a write overlapped it
        self._jobs: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._reader: threading.Thread | None = None
        self._idle = threading.Condition(lock)
        self.served = 0  # searches answered from kept postings
        self.reads = 0  # postings (and scope tables) read and installed

    @property
    def held(self) -> int:
        """Postings kept in memory."""
        return self._held

    @property
    def keeps_terms(self) -> bool:
        """Whether any term is kept or being read: then every write must name the terms it changes."""
        return bool(self._terms) or bool(self._wanted)

    def forget(self, terms: Iterable[str]) -> None:
        """Drop the postings of terms a write changed (and spoil reads of them under way)."""
        for term in terms:
            dropped = self._terms.pop(term, None)
            if dropped is not None:
                self._held -= len(dropped.rows)
            if term in self._wanted:
                self._wanted[term] = True

    def row_added(self, rowid: int, scope: str) -> None:
        """A row was written (kept only once the scopes have been read)."""
        if _SCOPES in self._wanted:
            self._wanted[_SCOPES] = True
        if self._scope_of is None:
            return
        if rowid >= len(self._scope_of):
            grown = np.full(max(rowid + 1, len(self._scope_of) * 3 // 2), _NO_SCOPE, dtype=np.int32)
            grown[: len(self._scope_of)] = self._scope_of
            self._scope_of = grown
        self._scope_of[rowid] = self._scopes.setdefault(scope, len(self._scopes))

    def clear(self) -> None:
        """Forget everything (the index was emptied, or a write failed)."""
        self._terms.clear()
        self._held = 0
        self._scope_of = None
        self._scopes.clear()
        for job in self._wanted:
            self._wanted[job] = True

    def best(
        self, terms: Sequence[str], *, scope: str | None, first_row: int, k: int
    ) -> list[tuple[int, float]] | None:
        """The k best (rowid, score) for an OR of `terms` (stemmed, one per query word, in the
        query's order; a term may repeat), among the rows of `scope` (None: every row) from
        `first_row` on; best first, every row scoring the same as the k-th included (the caller
        orders ties). None when a term (or the rows' scopes) is not kept yet: it is read in the
        background, and this search is for FTS5."""
        missing = [term for term in dict.fromkeys(terms) if term not in self._terms]
        if scope is not None and self._scope_of is None:
            missing.append(_SCOPES)
        if missing:
            self._want(missing)
            return None
        self.served += 1
        if k <= 0:
            return []
        whole = [self._terms[term] for term in terms]
        kept = [self._within(p, scope, first_row) for p in whole]
        present = [p.rows for p in kept if len(p.rows)]
        if not present:
            return []
        rows = np.sort(np.concatenate(present)) if len(present) > 1 else present[0]
        if len(present) > 1 and len(rows) > 1:
            rows = rows[np.concatenate(([True], rows[1:] != rows[:-1]))]
        total_rows, average = self._totals()
        scores = np.zeros(len(rows), dtype=np.float64)
        for p, everywhere in zip(kept, whole, strict=True):  # in the query's order, as bm25() adds them up
            if not len(p.rows):
                continue
            n = len(everywhere.rows)  # rows holding the term in the whole index, as bm25() counts
            idf = math.log((total_rows - n + 0.5) / (n + 0.5))
            if idf <= 0.0:
                idf = MIN_IDF
            at = np.searchsorted(rows, p.rows)  # every row of p is in rows
            scores[at] += idf * ((p.hits * (K1 + 1.0)) / (p.hits + K1 * (1 - B + B * p.lengths / average)))
        if len(rows) > k:
            kth = np.partition(scores, len(scores) - k)[len(scores) - k]
            chosen = np.flatnonzero(scores >= kth)
        else:
            chosen = np.arange(len(rows))
        order = chosen[np.argsort(-scores[chosen], kind="stable")]
        return [(int(rows[i]), float(scores[i])) for i in order]

    def wait_idle(self, timeout: float = 30.0) -> bool:
        """Wait until nothing is queued or being read (tests, benchmarks); False on timeout."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._wanted, timeout)

    def close(self) -> None:
        """Stop the background reader (what it was reading is dropped)."""
        if self._reader is not None:
            self._jobs.put(None)
            self._reader.join(timeout=5)
            self._reader = None

    def _want(self, jobs: Sequence[str]) -> None:
        """Queue reads (caller holds the lock)."""
        for job in jobs:
            if job not in self._wanted:
                self._wanted[job] = False
                self._jobs.put(job)
        if self._reader is None:
            self._reader = threading.Thread(target=self._read_forever, name="tap-lexical-postings", daemon=True)
            self._reader.start()

    def _read_forever(self) -> None:
        lower_thread_priority()
        reader: sqlite3.Connection | None = None
        try:
            while (job := self._jobs.get()) is not None:
                try:
                    if reader is None:
                        reader = connect(self._path)
                        reader.execute(
                            f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{self._table}_instances "
                            f"USING fts5vocab(main, {self._table}, 'instance')"
                        )
                    read = self._read_scopes(reader) if job == _SCOPES else self._read_postings(reader, job)
                except sqlite3.Error as exc:  # the hot path goes on with FTS5; the next miss asks again
                    log.warning("could not read the lexical postings of %r: %s", job or "the scopes", exc)
                    read = None
                with self._idle:
                    spoiled = self._wanted.pop(job, True)
                    if read is not None and not spoiled:
                        self._install(job, read)
                    self._idle.notify_all()
        finally:
            if reader is not None:
                reader.close()

    def _install(self, job: str, read: _Postings | tuple[npt.NDArray[np.int32], dict[str, int]]) -> None:
        self.reads += 1
        if isinstance(read, tuple):
            self._scope_of, scopes = read
            self._scopes.clear()
            self._scopes.update(scopes)
            return
        if self._held + len(read.rows) > POSTINGS_CACHE_MAX:
            self._terms.clear()
            self._held = 0
        self._terms[job] = read
        self._held += len(read.rows)

    def _within(self, postings: _Postings, scope: str | None, first_row: int) -> _Postings:
        """The postings of the rows of `scope` (None: all) from `first_row` on."""
        keep = postings.rows >= first_row if first_row > 0 else None
        if scope is not None and self._scope_of is not None:
            scope_of = self._scope_of
            number = self._scopes.get(scope, _NO_SCOPE - 1)
            known = postings.rows < len(scope_of)
            in_scope = np.zeros(len(postings.rows), dtype=bool)
            in_scope[known] = scope_of[postings.rows[known]] == number
            keep = in_scope if keep is None else keep & in_scope
        if keep is None or keep.all():
            return postings
        return _Postings(postings.rows[keep], postings.hits[keep], postings.lengths[keep])

    def _read_postings(self, reader: sqlite3.Connection, term: str) -> _Postings:
        rows = reader.execute(
            f"SELECT i.doc, count(*), d.sz FROM temp.{self._table}_instances AS i "
            f"JOIN main.{self._table}_docsize AS d ON d.id = i.doc "
            "WHERE i.term = ? AND i.col = ? GROUP BY i.doc ORDER BY i.doc",
            (term, CONTENT_COLUMN),
        ).fetchall()
        return _Postings(
            np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)),
            np.fromiter((r[1] for r in rows), dtype=np.float64, count=len(rows)),
            np.fromiter((varint_sum(r[2]) for r in rows), dtype=np.float64, count=len(rows)),
        )

    @staticmethod
    def _read_scopes(reader: sqlite3.Connection) -> tuple[npt.NDArray[np.int32], dict[str, int]]:
        pairs = reader.execute("SELECT fts_row, scope FROM entries").fetchall()
        scopes: dict[str, int] = {}
        scope_of = np.full(max((int(r[0]) for r in pairs), default=0) + 1, _NO_SCOPE, dtype=np.int32)
        for rowid, scope in pairs:
            scope_of[int(rowid)] = scopes.setdefault(str(scope), len(scopes))
        return scope_of, scopes

    def _totals(self) -> tuple[int, float]:
        """The row count and the average row length (all columns), as bm25() reads them."""
        got = self._db.execute(f"SELECT block FROM {self._table}_data WHERE id = ?", (_AVERAGES_ROWID,)).fetchone()
        if got is None:
            return 0, 1.0
        block = bytes(got[0])
        total_rows, offset = read_varint(block, 0)
        tokens = varint_sum(block[offset:])
        return total_rows, (tokens / total_rows if total_rows else 1.0)
