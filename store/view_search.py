"""The searches of the CLI's read view (store.read_view): the recall process's view of the lexical
index's file (store.replica), asking the store for what it cannot answer exactly.

Kept apart from store.read_view so that a listing or a status imports neither numpy nor the scopes'
vectors: this module is imported by the view's first search. A scope it cannot search in memory,
or an old version (recall's history lines: ReplicaStore.get asks the view's `versions`) when the
store holds some, raises `NeedsStore`: the caller then asks the opened store.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from store.read_view import NeedsStore
from store.replica import NotHere, ReplicaStore
from store.scope_vectors import EXACT_SCOPE_MAX, VECTOR_CACHE_BYTES
from tap.records import Hit, Memory

__all__ = ["ViewSearch"]


class ViewSearch(ReplicaStore):
    """A RecallStore over the read view's file (see the module docstring)."""

    def __init__(
        self,
        lexical_path: Path,
        exact_scope_max: int | None,
        max_vectors: int | None,
        *,
        versions: Callable[[Sequence[str]], list[Memory]],
    ) -> None:
        super().__init__(
            lexical_path,
            exact_scope_max=exact_scope_max if exact_scope_max is not None else EXACT_SCOPE_MAX,
            max_vectors=max_vectors if max_vectors is not None else VECTOR_CACHE_BYTES // (4 * 384),
            versions=versions,
        )

    def search_vectors(
        self, vectors: Sequence[Sequence[float]], *, scope: str, k: int, at_least: int | None = None
    ) -> list[list[Hit]]:
        """ReplicaStore's search; a scope it cannot search in memory needs the store."""
        try:
            return super().search_vectors(vectors, scope=scope, k=k, at_least=at_least)
        except NotHere as exc:
            raise NeedsStore(str(exc)) from exc
