"""A change feed beside a shared Chroma collection, so every tap process sharing a Chroma server
keeps its local lexical index in step with the others' writes.

Each tap process keeps a local SQLite FTS5 index (store.lexical) of the active memories: Chroma
offers no BM25 outside its cloud. With several processes on one Chroma server, a memory written,
updated, superseded or forgotten by one must reach the others' indexes. Counting was not enough
(a memory superseded in one process and one added in another leave the counts equal), and Chroma
has no change stream, so tap writes its own: every write of memories to the collection is followed
by one entry per memory in the sibling collection `<collection>__changes` (id, scope, when, which
process). Each process polls it (store.chroma, about every second) for entries of other processes
since its cursor and re-reads those memories from the collection: active ones are (re)indexed,
the rest dropped. An entry says only "look at this id again" — never content, so a forgotten
memory leaves nothing behind — and re-reading makes the order of entries irrelevant.

Clocks: entries carry their writer's wall clock; a reader asks for entries from `OVERLAP_S` before
the newest one it has seen (and skips those it has seen), so machines whose clocks agree within
that (NTP) miss nothing. Entries older than `RETAIN_S` are pruned; a process whose cursor is older
than that (it was down) rebuilds its index from the collection instead.

The feed has one-dimensional zero vectors (Chroma requires vectors; this collection is never
searched by vector). Every chromadb error is translated into StoreError by the caller.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["OVERLAP_S", "RETAIN_S", "ChangeEntry", "ChangeFeed"]

OVERLAP_S = 5.0
RETAIN_S = 3600.0
_PAGE = 5000


@dataclass(frozen=True)
class ChangeEntry:
    """One entry: memory `memory` of `scope` was written at `at` (its writer's clock)."""

    id: str
    memory: str
    scope: str
    at: float


class ChangeFeed:
    """The `<collection>__changes` collection of one shared Chroma collection."""

    def __init__(self, client: Any, collection: str, *, now: Callable[[], float] = time.time) -> None:
        self.origin = uuid.uuid4().hex[:16]  # this process (so it skips its own entries)
        self._now = now
        self._col = client.get_or_create_collection(
            f"{collection}__changes", metadata={"hnsw:space": "l2", "tap": "changes"}, embedding_function=None
        )
        self._seen: dict[str, float] = {}

    def announce(self, changed: Sequence[tuple[str, str]]) -> None:
        """Record that these (memory id, scope) were written, updated or deleted."""
        if not changed:
            return
        at = self._now()
        self._col.add(
            ids=[uuid.uuid4().hex for _ in changed],
            embeddings=[[0.0] for _ in changed],
            metadatas=[{"memory": m, "scope": s, "at": at, "origin": self.origin} for m, s in changed],
        )

    def newest(self) -> float:
        """The newest entry's time (0.0 when the feed is empty): where a rebuilt index starts."""
        newest = 0.0
        for change in self._read(self._now() - RETAIN_S, mine=True):
            newest = max(newest, change.at)
        return newest

    def since(self, cursor: float) -> list[ChangeEntry]:
        """Other processes' entries from `OVERLAP_S` before `cursor` that were not returned yet."""
        fresh = [c for c in self._read(cursor - OVERLAP_S, mine=False) if c.id not in self._seen]
        for change in fresh:
            self._seen[change.id] = change.at
        horizon = max([cursor, *(c.at for c in fresh)]) - 2 * OVERLAP_S
        self._seen = {i: at for i, at in self._seen.items() if at >= horizon}
        return fresh

    def _read(self, start: float, *, mine: bool) -> list[ChangeEntry]:
        where: dict[str, Any] = {"at": {"$gte": start}}
        if not mine:
            where = {"$and": [where, {"origin": {"$ne": self.origin}}]}
        out: list[ChangeEntry] = []
        offset = 0
        while True:
            got = self._col.get(where=where, include=["metadatas"], limit=_PAGE, offset=offset)
            for change_id, meta in zip(got["ids"], got["metadatas"] or [], strict=False):
                meta = meta or {}
                out.append(ChangeEntry(change_id, str(meta.get("memory", "")), str(meta.get("scope", "")), _at(meta)))
            if len(got["ids"]) < _PAGE:
                return out
            offset += _PAGE

    def prune(self) -> None:
        """Drop entries older than RETAIN_S."""
        self._col.delete(where={"at": {"$lt": self._now() - RETAIN_S}})


def _at(meta: dict[str, Any]) -> float:
    value = meta.get("at", 0.0)
    return float(value) if isinstance(value, int | float) else 0.0
