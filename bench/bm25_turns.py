"""The benchmarks' baseline: Okapi BM25 over raw conversation turns, packed into a token budget.

Shared by bench/locomo.py and bench/longmemeval.py so both report the same baseline. It is an
index of its own (SQLite FTS5, Porter stemming, k1 = 1.2, b = 0.75), independent of tap's lexical
index: the query is the OR of its distinct lower-case words without stop words; ties keep document
order. `pack_lines` fills a budget greedily, best first, with tap's token counter (which never
under-counts) and one token per line break, skipping a line that does not fit and going on.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence

from tap.tokens import count_tokens

__all__ = ["BM25", "bm25_terms", "pack_lines"]

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    "a an and are as at be been but by can did do does for from had has have he her hers him his how i if in "
    "into is it its me my of on or our she so that the their them then there these they this to was we were "
    "what when where which who whom why will with would you your".split()
)


def bm25_terms(text: str) -> list[str]:
    """The distinct lower-case alphanumeric words of a query, without stop words."""
    return list(dict.fromkeys(w for w in _WORD.findall(text.lower()) if w not in _STOP))


class BM25:
    """Okapi BM25 (SQLite FTS5: k1 = 1.2, b = 0.75, Porter stemming) over a fixed list of documents.

    The query is the OR of its terms; ties keep document order. An independent index, not tap's.
    """

    def __init__(self, documents: Sequence[str]) -> None:
        self._db = sqlite3.connect(":memory:")
        self._db.execute("CREATE VIRTUAL TABLE docs USING fts5(content, tokenize='porter unicode61')")
        self._db.executemany("INSERT INTO docs (rowid, content) VALUES (?, ?)", list(enumerate(documents)))

    def rank(self, query: str) -> list[int]:
        """Indexes of the matching documents, best first."""
        terms = bm25_terms(query)
        if not terms:
            return []
        match = " OR ".join(f'"{t}"' for t in terms)
        rows = self._db.execute("SELECT rowid FROM docs WHERE docs MATCH ? ORDER BY bm25(docs), rowid", (match,))
        return [int(row[0]) for row in rows]

    def close(self) -> None:
        self._db.close()


def pack_lines(lines: Sequence[str], budget: int) -> tuple[list[int], int]:
    """Greedy packing of lines (best first) into the budget; returns chosen indexes and tokens used."""
    used = 0
    chosen: list[int] = []
    for index, line in enumerate(lines):
        cost = count_tokens(line) + 1
        if used + cost <= budget:
            used += cost
            chosen.append(index)
    return chosen, used
