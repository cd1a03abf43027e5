"""BM25 over the FTS5 index's own postings, scored in memory: the lexical index's hot path.

FTS5's bm25() scores every matching row in SQL, the largest cost of a recall after the query
embedding when a question's common words match thousands of memories. Here each term's postings
(rowid, hits in the row) are read from FTS5 once (fts5vocab 'instance') and kept as arrays, beside
every row's length and scope (read once, on a background thread with its own connection; until
then `best` returns None and FTS5 ranks); a query adds up its terms' contributions with numpy. A
term missing on the hot path is read there (SQLite and numpy parse it, no Python loop per posting).

The scores are FTS5's own, to the bit: SQLite's fts5 bm25() formula (k1 = 1.2, b = 0.75,
IDF = log((N - n + 0.5) / (n + 0.5)), at least 1e-6) with N, the average and each row's length
read from the index's own records, only the `content` column's hits counted, terms added in the
query's order. A test holds the ranking and the scores equal to FTS5's.

Invariants:
- a term's postings are current: every write names the terms of the texts it adds and removes
  (tokenized by FTS5 itself) and their postings are dropped, to be read again; a background read
  of the row table that any write overlapped is thrown away, never installed;
- a row never changes (replacing a memory writes a new row), so length and scope are kept per
  rowid, set by each write;
- the caller holds the index's lock (the background reader takes it only to install what it read).
"""

from __future__ import annotations

import heapq
import logging
import math
import queue
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from tap.runtime.priority import lower_thread_priority
from tap.sqlite import connect

log = logging.getLogger(__name__)

K1 = 1.2
B = 0.75
MIN_IDF = 1e-6
POSTINGS_CACHE_MAX = 1_000_000
"""Postings kept in memory across all terms (16 bytes each); past it the least recently searched
terms are dropped."""
CONTENT_COLUMN = "content"
TIE_ROWS_MAX = 512
"""Of the rows that tie with the k-th best score, at most this many compete for the last places
(the newest: highest rowids), then ties are broken by id (`newest_ties`). A question made only of
words in most memories gives thousands of rows the same score, whose ids would all be read and
sorted."""

_AVERAGES_ROWID = 1  # FTS5 keeps the row count and each column's token total in %_data row 1
_NO_SCOPE = -1
_ROWS: Final = ""  # the reader's job that reads every row's length and scope (no term is empty)

if TYPE_CHECKING:  # numpy is imported where postings are read or scored: a listing of the index reads none
    import numpy as np
    import numpy.typing as npt

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


def varint_sums(data: npt.NDArray[np.uint8], sizes: Rows) -> Floats:
    """`varint_sum` of many records at once: `data` holds them back to back, `sizes` their bytes
    (values of up to 8 bytes, as row lengths are)."""
    import numpy as np

    if not len(data):
        return np.zeros(len(sizes), dtype=np.float64)
    ends = np.flatnonzero(data < 0x80)  # the last byte of each varint
    at = np.arange(len(data))
    shift = 7 * (ends[np.searchsorted(ends, at)] - at)
    values = (data & 0x7F).astype(np.int64) << shift
    return np.bincount(np.repeat(np.arange(len(sizes)), sizes), weights=values, minlength=len(sizes))


def int_list(text: str | None) -> Rows:
    """The integers of a group_concat (comma-separated; None when there were none), parsed in C."""
    import numpy as np

    return np.fromstring(text, dtype=np.int64, sep=",") if text else np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class _Postings:
    """One term's rows (ascending) and its hits in `content` in each."""

    rows: Rows
    hits: Floats


@dataclass
class _RowTable:
    """Every row's length in tokens (all columns, as bm25() counts) and scope number, by rowid."""

    lengths: Floats
    scope_of: npt.NDArray[np.int32]
    scopes: dict[str, int]

    def set(self, rowid: int, length: int, scope: str) -> None:
        if rowid >= len(self.lengths):
            import numpy as np

            size = max(rowid + 1, len(self.lengths) * 3 // 2)
            self.lengths = np.concatenate([self.lengths, np.zeros(size - len(self.lengths))])
            self.scope_of = np.concatenate(
                [self.scope_of, np.full(size - len(self.scope_of), _NO_SCOPE, dtype=np.int32)]
            )
        self.lengths[rowid] = length
        self.scope_of[rowid] = self.scopes.setdefault(scope, len(self.scopes))


def newest_ties(best: Sequence[tuple[int, float]], k: int) -> list[tuple[int, float]]:
    """(rowid, score) pairs holding every row that scores above the k-th best and every row tying
    with it, cut to the rows above it and the newest TIE_ROWS_MAX of the tying ones."""
    if k <= 0 or len(best) <= k:
        return list(best)
    kth = heapq.nlargest(k, (score for _, score in best))[-1]
    tied = sorted((rowid for rowid, score in best if score == kth), reverse=True)
    if len(tied) <= TIE_ROWS_MAX:
        return list(best)
    newest = set(tied[:TIE_ROWS_MAX])
    return [(rowid, score) for rowid, score in best if score > kth or rowid in newest]


class TermPostings:
    """Per-term postings of one FTS5 table and every row's length and scope (see the module docstring)."""

    def __init__(self, db: sqlite3.Connection, path: Path, lock: threading.Lock, table: str = "memories") -> None:
        self._db = db
        self._path = path
        self._lock = lock  # the index's: held by every caller, and by the reader to install
        self._table = table
        self._terms: OrderedDict[str, _Postings] = OrderedDict()  # least recently searched first
        self._held = 0
        self._rows: _RowTable | None = None
        self._kept_totals: tuple[int, float] | None = None  # see _totals
        self._wanted: dict[str, bool] = {}  # queued or being read -> a write overlapped it
        self._jobs: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        db.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{table}_instances USING fts5vocab(main, {table}, 'instance')"
        )
        self._reader: threading.Thread | None = None
        self._idle = threading.Condition(lock)
        self.served = 0  # searches answered from kept postings
        self.reads = 0  # terms' postings and row tables read

    @property
    def held(self) -> int:
        """Postings kept in memory."""
        return self._held

    @property
    def keeps_terms(self) -> bool:
        """Whether any term is kept: then every write must name the terms it changes."""
        return bool(self._terms)

    def forget(self, terms: Iterable[str]) -> None:
        """Drop the postings of terms a write changed (and the row count and average length
        kept: every committed write of the index passes here)."""
        self._kept_totals = None
        for term in terms:
            dropped = self._terms.pop(term, None)
            if dropped is not None:
                self._held -= len(dropped.rows)

    def warm(self) -> None:
        """Start reading the row table in the background, if it is not kept (caller holds the lock)."""
        if self._rows is None:
            self._want(_ROWS)

    def row_added(self, rowid: int, scope: str) -> None:
        """A row was written (inside its transaction: its docsize record is there to read)."""
        if _ROWS in self._wanted:
            self._wanted[_ROWS] = True
        if self._rows is None:
            return
        size = self._db.execute(f"SELECT sz FROM {self._table}_docsize WHERE id = ?", (rowid,)).fetchone()
        self._rows.set(rowid, varint_sum(bytes(size[0])) if size else 0, scope)

    def clear(self) -> None:
        """Forget everything (the index was emptied, or a write failed)."""
        self._terms.clear()
        self._held = 0
        self._rows = None
        self._kept_totals = None
        for job in self._wanted:
            self._wanted[job] = True

    def best(
        self, terms: Sequence[str], *, scope: str | None, first_row: int, k: int
    ) -> list[tuple[int, float]] | None:
        """The k best (rowid, score) for an OR of `terms` (stemmed, one per query word, in the
        query's order; a term may repeat), among the rows of `scope` (None: every row) from
        `first_row` on; best first, every row scoring the same as the k-th included, or the
        newest TIE_ROWS_MAX of them (the caller orders ties: `newest_ties`). None while the row
        table is not kept: it is read in the background, and this search is for FTS5. A term not
        kept is read now."""
        import numpy as np

        table = self._rows
        if table is None:
            self._want(_ROWS)
            return None
        self.served += 1
        if k <= 0:
            return []
        whole = [self._postings(term) for term in terms]
        if any(len(p.rows) and p.rows[-1] >= len(table.lengths) for p in whole):  # never expected: read again
            log.warning("lexical postings ahead of the row table; reading them again")
            self.clear()
            return None
        kept = [self._within(p, table, scope, first_row) for p in whole]
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
            length = table.lengths[p.rows]
            scores[at] += idf * ((p.hits * (K1 + 1.0)) / (p.hits + K1 * (1 - B + B * length / average)))
        if len(rows) > k:
            kth = np.partition(scores, len(scores) - k)[len(scores) - k]
            chosen = np.flatnonzero(scores >= kth)
            tied = chosen[scores[chosen] == kth]
            if len(tied) > TIE_ROWS_MAX:  # the newest of them (rows ascend): see TIE_ROWS_MAX
                chosen = np.concatenate((chosen[scores[chosen] > kth], tied[-TIE_ROWS_MAX:]))
        else:
            chosen = np.arange(len(rows))
        order = chosen[np.argsort(-scores[chosen], kind="stable")]
        return [(int(rows[i]), float(scores[i])) for i in order]

    def status(self) -> dict[str, int | bool]:
        """What is kept, and how many searches it answered (caller holds the lock)."""
        return {
            "row_table": self._rows is not None,
            "terms": len(self._terms),
            "postings": self._held,
            "searches_served": self.served,
            "reads": self.reads,
        }

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

    def _want(self, job: str) -> None:
        """Queue a background read (caller holds the lock)."""
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
                read: _RowTable | None
                try:
                    reader = reader or connect(self._path)
                    read = self._read_rows(reader)
                except Exception as exc:  # the hot path goes on with FTS5; the next search asks again
                    log.warning("could not read the lexical index's row table: %s", exc)
                    read = None
                with self._idle:
                    spoiled = self._wanted.pop(job, True)
                    if read is not None and not spoiled:
                        self._rows = read
                        self.reads += 1
                    self._idle.notify_all()
        finally:
            if reader is not None:
                reader.close()

    def _postings(self, term: str) -> _Postings:
        """A term's postings, read now if not kept."""
        found = self._terms.get(term)
        if found is not None:
            self._terms.move_to_end(term)
            return found
        found = self._read_postings(self._db, term)
        self.reads += 1
        while self._terms and self._held + len(found.rows) > POSTINGS_CACHE_MAX:
            _, dropped = self._terms.popitem(last=False)  # the least recently searched term first
            self._held -= len(dropped.rows)
        self._terms[term] = found
        self._held += len(found.rows)
        return found

    @staticmethod
    def _within(postings: _Postings, table: _RowTable, scope: str | None, first_row: int) -> _Postings:
        """The postings of the rows of `scope` (None: all) from `first_row` on."""
        keep = postings.rows >= first_row if first_row > 0 else None
        if scope is not None:
            in_scope = table.scope_of[postings.rows] == table.scopes.get(scope, _NO_SCOPE - 1)
            keep = in_scope if keep is None else keep & in_scope
        if keep is None or keep.all():
            return postings
        return _Postings(postings.rows[keep], postings.hits[keep])

    def _read_postings(self, db: sqlite3.Connection, term: str) -> _Postings:
        """A term's rows and hits: one instance per hit, in rowid order, counted with numpy."""
        import numpy as np

        (docs,) = db.execute(
            f"SELECT group_concat(doc) FROM temp.{self._table}_instances WHERE term = ? AND col = ?",
            (term, CONTENT_COLUMN),
        ).fetchone()
        rows, hits = np.unique(int_list(docs), return_counts=True)
        return _Postings(rows, hits.astype(np.float64))

    def _read_rows(self, reader: sqlite3.Connection) -> _RowTable:
        """Every row's length (its docsize record, decoded with numpy) and scope (one scope at a time)."""
        import numpy as np

        ids, sizes, data = reader.execute(
            f"SELECT group_concat(id), group_concat(length(sz)), group_concat(hex(sz), '') FROM {self._table}_docsize"
        ).fetchone()
        rowids = int_list(ids)
        top = int(rowids.max()) + 1 if len(rowids) else 1
        lengths = np.zeros(top, dtype=np.float64)
        lengths[rowids] = varint_sums(np.frombuffer(bytes.fromhex(data or ""), dtype=np.uint8), int_list(sizes))
        scope_of = np.full(top, _NO_SCOPE, dtype=np.int32)
        scopes: dict[str, int] = {}
        for scope, rows in reader.execute("SELECT scope, group_concat(fts_row) FROM entries GROUP BY scope"):
            number = scopes.setdefault(str(scope), len(scopes))
            found = int_list(rows)
            scope_of[found[found < top]] = number
        return _RowTable(lengths, scope_of, scopes)

    def _totals(self) -> tuple[int, float]:
        """The row count and the average row length (all columns), as bm25() reads them; kept
        until the next write (a read of the index lets go of the GIL, and under load getting it
        back is what a BM25 search waited for most)."""
        if self._kept_totals is None:
            self._kept_totals = self._read_totals()
        return self._kept_totals

    def _read_totals(self) -> tuple[int, float]:
        got = self._db.execute(f"SELECT block FROM {self._table}_data WHERE id = ?", (_AVERAGES_ROWID,)).fetchone()
        if got is None:
            return 0, 1.0
        block = bytes(got[0])
        total_rows, offset = read_varint(block, 0)
        tokens = varint_sum(block[offset:])
        return total_rows, (tokens / total_rows if total_rows else 1.0)
