"""A read view of the embedded store for the CLI when no `tap serve` runs: no Chroma, no lock.

The lexical index's file holds every active memory with its record and vector (store.lexical).
`tap status`, `tap memories list|search` and `tap recall` read it through this view, which opens
in milliseconds where embedded Chroma takes seconds: searches as the recall process does
(store.replica), listings and counts from the records.

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

import msgspec

from store.lexical import LexicalIndex
from store.replica import NotHere, ReplicaStore
from store.scope_vectors import EXACT_SCOPE_MAX, VECTOR_CACHE_BYTES
from tap.records import Hit, Memory

__all__ = ["NeedsStore", "ReadView"]

_decode = msgspec.json.Decoder(Memory).decode


class NeedsStore(Exception):
    """The read view cannot answer this exactly; the store can."""


class ReadView(ReplicaStore):
    """The active memories, read from the lexical index's file (see the module docstring)."""

    def __init__(
        self,
        lexical_path: Path,
        *,
        embedder_id: str,
        exact_scope_max: int = EXACT_SCOPE_MAX,
        max_vectors: int = VECTOR_CACHE_BYTES // (4 * 384),
    ) -> None:
        if not lexical_path.exists():
            raise NeedsStore(f"no index at {lexical_path}")
        try:
            super().__init__(
                lexical_path, exact_scope_max=exact_scope_max, max_vectors=max_vectors, versions=self._versions
            )
        except sqlite3.Error as exc:  # an index of an older layout: the store upgrades it
            raise NeedsStore(f"the index at {lexical_path} cannot be read here: {exc}") from exc
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

    def _versions(self, ids: Sequence[str]) -> list[Memory]:
        """Memories that are not active (old versions, for recall's history lines): only the store has them."""
        if ids and self.total > self.active:
            raise NeedsStore("old versions are read from the store")
        return []

    def search_vectors(
        self, vectors: Sequence[Sequence[float]], *, scope: str, k: int, at_least: int | None = None
    ) -> list[list[Hit]]:
        """ReplicaStore's search; a scope it cannot search in memory needs the store."""
        try:
            return super().search_vectors(vectors, scope=scope, k=k, at_least=at_least)
        except NotHere as exc:
            raise NeedsStore(str(exc)) from exc

    def get(self, ids: Sequence[str]) -> list[Memory]:
        """The memories with these ids; one that is not active needs the store."""
        found = self.get_active(ids)
        if len(found) < len(set(ids)):
            self._versions([i for i in ids if i not in {m.id for m in found}])
        return found

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

    def scope_counts(self) -> dict[str, tuple[int, int]]:
        """Active memories per scope as (statements, excerpts), scopes sorted by name."""
        counts: dict[str, list[int]] = {}
        for memory in map(_decode, self._lexical.all_records()):
            counts.setdefault(memory.scope, [0, 0])[memory.kind == "episode"] += 1
        return {scope: (n[0], n[1]) for scope, n in sorted(counts.items())}
