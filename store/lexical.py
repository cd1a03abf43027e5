"""The lexical half of hybrid recall: an SQLite FTS5 index with BM25 ranking.

Local Chroma has no sparse index, so tap keeps this one beside it. Invariants: it holds exactly
the *active* memories (same ids, same scope as the store); the store writes both in step and
rebuilds this index from Chroma when their counts disagree (e.g. after a crash between the two
writes, or when several machines share one Chroma server).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

from tap.sqlite import connect

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_STOP = frozenset(
    "a an and are as at be been but by did do does for from had has have he her his how i if in into is "
    "it its me my of on or our she so that the their them then there these they this to was we were "
    "what when where which who whom why will with would you your".split()
)
_MAX_TERMS = 32


def query_terms(text: str) -> list[str]:
    """The distinct, lower-cased, non-stop-word terms of a query, in order."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(text.lower()):
        if word not in _STOP and word not in seen:
            seen[word] = None
    return list(seen)[:_MAX_TERMS]


class LexicalIndex:
    """FTS5 over active memories; thread-safe; one connection per index."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db = connect(path)
        self._db.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS memories USING fts5("
            "id UNINDEXED, scope UNINDEXED, content, tokenize='porter unicode61')"
        )

    def upsert(self, rows: Iterable[tuple[str, str, str]]) -> None:
        """Index (id, scope, content) rows, replacing same-id rows."""
        rows = list(rows)
        with self._lock:
            self._db.execute("BEGIN")
            self._db.executemany("DELETE FROM memories WHERE id = ?", [(r[0],) for r in rows])
            self._db.executemany("INSERT INTO memories (id, scope, content) VALUES (?, ?, ?)", rows)
            self._db.execute("COMMIT")

    def remove(self, ids: Sequence[str]) -> None:
        """Drop these ids from the index (superseded or deleted memories)."""
        with self._lock:
            self._db.executemany("DELETE FROM memories WHERE id = ?", [(i,) for i in ids])

    def search(self, query: str, *, scope: str, k: int) -> list[tuple[str, float]]:
        """(id, score) pairs best first; score is -bm25, so higher is better."""
        terms = query_terms(query)
        if not terms:
            return []
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        with self._lock:
            rows = self._db.execute(
                "SELECT id, bm25(memories) AS rank FROM memories WHERE memories MATCH ? AND scope = ? "
                "ORDER BY rank LIMIT ?",
                (match, scope, k),
            ).fetchall()
        return [(row[0], -float(row[1])) for row in rows]

    def count(self) -> int:
        """How many memories the index holds."""
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM memories").fetchone()[0])

    def clear(self) -> None:
        """Empty the index (before a rebuild)."""
        with self._lock:
            self._db.execute("DELETE FROM memories")

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
