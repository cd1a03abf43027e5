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

Invariants:
- Only rows that hold a term are in its postings, and a term's postings are current: every
  write names the terms of the texts it adds and removes (LexicalIndex tokenizes them with FTS5
  itself), and their postings are dropped, to be read again when next searched.
- A row never changes: replacing a memory writes a new row. So a row's length never changes
  either, and its scope is kept per rowid (`scope_of`), set by each write (a deleted row is in
  no postings once its terms are dropped, and a rowid FTS5 gives out again is set anew).
- The caller holds the index's lock: this reads and writes through its connection.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

K1 = 1.2
B = 0.75
MIN_IDF = 1e-6
POSTINGS_CACHE_MAX = 1_000_000
"""Postings kept in memory across all terms (~24 bytes each), then the cache starts over."""
CONTENT_COLUMN = "content"

_AVERAGES_ROWID = 1  # FTS5 keeps the row count and each column's token total in %_data row 1
_NO_SCOPE = -1

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

    def __init__(self, db: sqlite3.Connection, table: str = "memories") -> None:
        self._db = db
        self._table = table
        self._terms: dict[str, _Postings] = {}
        self._held = 0
        self._scope_of: npt.NDArray[np.int32] | None = None  # rowid -> scope number, or _NO_SCOPE
        self._scopes: dict[str, int] = {}
        db.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{table}_instances USING fts5vocab(main, {table}, 'instance')"
        )

    @property
    def held(self) -> int:
        """Postings kept in memory."""
        return self._held

    @property
    def keeps_terms(self) -> bool:
        """Whether any term's postings are kept (even an empty one): then writes must name theirs."""
        return bool(self._terms)

    def forget(self, terms: Iterable[str]) -> None:
        """Drop the postings of terms a write changed."""
        for term in terms:
            dropped = self._terms.pop(term, None)
            if dropped is not None:
                self._held -= len(dropped.rows)

    def row_added(self, rowid: int, scope: str) -> None:
        """A row was written (kept only once the scopes have been loaded)."""
        if self._scope_of is None:
            return
        if rowid >= len(self._scope_of):
            grown = np.full(max(rowid + 1, len(self._scope_of) * 3 // 2), _NO_SCOPE, dtype=np.int32)
            grown[: len(self._scope_of)] = self._scope_of
            self._scope_of = grown
        self._scope_of[rowid] = self._scopes.setdefault(scope, len(self._scopes))

    def clear(self) -> None:
        """Forget everything (the index was emptied)."""
        self._terms.clear()
        self._held = 0
        self._scope_of = None
        self._scopes.clear()

    def best(self, terms: Sequence[str], *, scope: str | None, first_row: int, k: int) -> list[tuple[int, float]]:
        """The k best (rowid, score) for an OR of `terms` (stemmed, one per query word, in the
        query's order; a term may repeat), among the rows of `scope` (None: every row) from
        `first_row` on; best first, every row scoring the same as the k-th included (the caller
        orders ties)."""
        if k <= 0:
            return []
        whole = [self._postings(term) for term in terms]
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

    def _within(self, postings: _Postings, scope: str | None, first_row: int) -> _Postings:
        """The postings of the rows of `scope` (None: all) from `first_row` on."""
        keep = postings.rows >= first_row if first_row > 0 else None
        if scope is not None:
            scope_of = self._scope_array()
            number = self._scopes.get(scope, _NO_SCOPE - 1)
            known = postings.rows < len(scope_of)
            in_scope = np.zeros(len(postings.rows), dtype=bool)
            in_scope[known] = scope_of[postings.rows[known]] == number
            keep = in_scope if keep is None else keep & in_scope
        if keep is None or keep.all():
            return postings
        return _Postings(postings.rows[keep], postings.hits[keep], postings.lengths[keep])

    def _postings(self, term: str) -> _Postings:
        found = self._terms.get(term)
        if found is not None:
            return found
        rows = self._db.execute(
            f"SELECT i.doc, count(*), d.sz FROM temp.{self._table}_instances AS i "
            f"JOIN main.{self._table}_docsize AS d ON d.id = i.doc "
            "WHERE i.term = ? AND i.col = ? GROUP BY i.doc ORDER BY i.doc",
            (term, CONTENT_COLUMN),
        ).fetchall()
        found = _Postings(
            np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)),
            np.fromiter((r[1] for r in rows), dtype=np.float64, count=len(rows)),
            np.fromiter((varint_sum(r[2]) for r in rows), dtype=np.float64, count=len(rows)),
        )
        if self._held + len(rows) > POSTINGS_CACHE_MAX:
            self._terms.clear()
            self._held = 0
        self._terms[term] = found
        self._held += len(rows)
        return found

    def _totals(self) -> tuple[int, float]:
        """The row count and the average row length (all columns), as bm25() reads them."""
        got = self._db.execute(f"SELECT block FROM {self._table}_data WHERE id = ?", (_AVERAGES_ROWID,)).fetchone()
        if got is None:
            return 0, 1.0
        block = bytes(got[0])
        total_rows, offset = read_varint(block, 0)
        tokens = varint_sum(block[offset:])
        return total_rows, (tokens / total_rows if total_rows else 1.0)

    def _scope_array(self) -> npt.NDArray[np.int32]:
        if self._scope_of is None:
            pairs = self._db.execute("SELECT fts_row, scope FROM entries").fetchall()
            top = max((int(r[0]) for r in pairs), default=0)
            scope_of = np.full(top + 1, _NO_SCOPE, dtype=np.int32)
            for rowid, scope in pairs:
                scope_of[int(rowid)] = self._scopes.setdefault(str(scope), len(self._scopes))
            self._scope_of = scope_of
        return self._scope_of
