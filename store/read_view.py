"""A read view of the embedded store for the CLI when no `tap serve` runs: no Chroma, no lock.

The lexical index's file holds every active memory with its record and vector (store.lexical).
`tap status`, `tap memories list|search` and `tap recall` read it through this view, which opens
in milliseconds where embedded Chroma takes seconds: listings and counts from the records (the
index alone: no numpy, no vectors), searches through `searcher()`, as the recall process does
(store.view_search over store.replica, made on the first search).

Exact or not at all: the view opens only when the file is known to be in step with Chroma (its
only writer closed cleanly, recording the collection's size, its embedder and how many current
memories are archived, and nobody opened the store to write since) and with the embedder asked
for. A question it cannot answer from the active memories alone (old versions, archived ones when
there are some, a scope too large to search in memory) raises `NeedsStore`: the caller opens the
store instead. Nothing here writes to the data dir.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from store.lexical import LexicalIndex
from tap.records import Memory

if TYPE_CHECKING:
    from store.view_search import ViewSearch

__all__ = ["NeedsStore", "ReadView"]

_decode = msgspec.json.Decoder(Memory).decode


class NeedsStore(Exception):
    """The read view cannot answer this exactly; the store can."""


class ReadView:
    """The active memories, read from the lexical index's file (see the module docstring)."""

    def __init__(
        self,
        lexical_path: Path,
        *,
        embedder_id: str,
        exact_scope_max: int | None = None,
        max_vectors: int | None = None,
    ) -> None:
        if not lexical_path.exists():
            raise NeedsStore(f"no index at {lexical_path}")
        try:
            self._lexical = LexicalIndex(lexical_path, read_only=True)
        except sqlite3.Error as exc:  # an index of an older layout: the store upgrades it
            raise NeedsStore(f"the index at {lexical_path} cannot be read here: {exc}") from exc
        self._path = lexical_path
        self._bounds = (exact_scope_max, max_vectors)
        self._searcher: ViewSearch | None = None
        state = self._lexical.clean_state()
        if state is None or state.embedder != embedder_id or state.archived is None:
            self.close()
            raise NeedsStore("the index is not known to be in step with the store")
        self.where = str(lexical_path.parent / "chroma")
        self.embedder_id = embedder_id
        self.total = state.total
        self.archived = state.archived
        self.active = self._lexical.count()

    @property
    def lexical(self) -> LexicalIndex:
        """The index this view reads."""
        return self._lexical

    def searcher(self) -> ViewSearch:
        """The view's searches, as a RecallStore for tap.recall.engine (made on first use: it
        brings numpy and the scopes' vectors, which a listing never needs)."""
        if self._searcher is None:
            from store.view_search import ViewSearch

            self._searcher = ViewSearch(self._path, *self._bounds, versions=self.versions)
        return self._searcher

    def versions(self, ids: Sequence[str]) -> list[Memory]:
        """Memories that are not active (old versions, for recall's history lines): only the store has them."""
        if ids and self.total > self.active:
            raise NeedsStore("old versions are read from the store")
        return []

    def get(self, ids: Sequence[str]) -> list[Memory]:
        """The memories with these ids (NeedsStore when one may be a version only the store has)."""
        found = self.get_active(ids)
        if len(found) < len(set(ids)):
            self.versions([i for i in ids if i not in {m.id for m in found}])
        return found

    def get_active(self, ids: Sequence[str]) -> list[Memory]:
        """The active memories among these ids, in the order asked."""
        if not ids:
            return []
        records = self._lexical.records(list(dict.fromkeys(ids)))
        return [_decode(records[i]) for i in ids if i in records]

    def _listed(
        self, scope: str | None, include_superseded: bool, excerpts: bool | None, archived: bool | None
    ) -> list[Memory]:
        """What a listing with these filters holds, newest first (NeedsStore when that is not only
        active memories)."""
        if include_superseded and self.total > self.active or archived is not False and self.archived:
            raise NeedsStore("old versions and archived memories are listed from the store")
        if archived is True:
            return []
        memories = [_decode(record) for record in self._lexical.all_records(scope)]
        if excerpts is not None:
            memories = [m for m in memories if (m.kind == "episode") == excerpts]
        memories.sort(key=lambda m: (m.created_at, m.id), reverse=True)
        return memories

    def list_memories(
        self,
        *,
        scope: str | None,
        limit: int,
        offset: int = 0,
        include_superseded: bool = False,
        excerpts: bool | None = None,
        archived: bool | None = None,
    ) -> list[Memory]:
        """As the store lists them (store.chroma.ChromaStore.list_memories)."""
        return self._listed(scope, include_superseded, excerpts, archived)[offset : offset + limit]

    def count_memories(
        self,
        *,
        scope: str | None,
        include_superseded: bool = False,
        excerpts: bool | None = None,
        archived: bool | None = None,
    ) -> int:
        """How many memories `list_memories` pages through with the same filter."""
        return len(self._listed(scope, include_superseded, excerpts, archived))

    def in_conflict(self, *, scope: str | None) -> list[Memory]:
        """Active memories naming another in `conflicts_with` (as store.chroma.ChromaStore.in_conflict)."""
        return [m for m in map(_decode, self._lexical.all_records(scope)) if m.conflicts_with]

    def scope_counts(self) -> dict[str, tuple[int, int]]:
        """Active memories per scope as (statements, excerpts), scopes sorted by name."""
        counts: dict[str, list[int]] = {}
        for memory in map(_decode, self._lexical.all_records()):
            counts.setdefault(memory.scope, [0, 0])[memory.kind == "episode"] += 1
        return {scope: (n[0], n[1]) for scope, n in sorted(counts.items())}

    def close(self) -> None:
        """Close the file (and the searcher's, if a search made it)."""
        if self._searcher is not None:
            self._searcher.close()
            self._searcher = None
        self._lexical.close()
