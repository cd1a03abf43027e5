"""Search with the memory list's filters: the layer (statements, excerpts or both), archived ones
(left out, alone, or beside the active ones) and old versions.

The active memories are ranked as recall ranks them (tap.recall.engine: vector and BM25 fused by
reciprocal rank, weighed by importance and recency). Archived memories and old versions, which
recall never reads and the lexical index does not hold, are found by their vectors (the store's
`inactive_search`, above the same similarity floor) and each scored as the fusion scores a hit of
one retriever at that rank, with the same weights, so the two lists merge on one scale.

Invariant: a memory a filter leaves out is never returned; archived memories and old versions
appear only when they are asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tap.ports import Embedder, MemoryStore
from tap.recall.engine import RRF_K, RecallEngine
from tap.recall.query import reduce_query
from tap.records import Memory

__all__ = ["filtered_search"]

Ranked = list[tuple[Memory, float]]
_ALL = 1_000_000  # the whole ranking: recall's candidates bound it


def filtered_search(
    engine: RecallEngine,
    store: MemoryStore,
    embedder: Embedder,
    query: str,
    *,
    scopes: Sequence[str],
    limit: int,
    excerpts: bool | None = None,
    archived: bool | None = False,
    all_versions: bool = False,
    now: float,
) -> Ranked:
    """The best `limit` memories of these scopes for the query, best first (`excerpts`: None both
    layers, True excerpts, False statements; `archived`: False active only, True archived only, None
    both; `all_versions`: superseded versions too)."""

    def layer(memory: Memory) -> bool:
        return excerpts is None or (memory.kind == "episode") == excerpts

    found: Ranked = []
    if archived is not True:
        found += [(m, s) for scope in scopes for m, s in engine.search(query, scope=scope, limit=_ALL) if layer(m)]
    if archived is not False or all_versions:

        def inactive(memory: Memory) -> bool:
            if memory.superseded_by:
                return all_versions
            return memory.archived and archived is not False

        found += _inactive_ranked(engine, store, embedder, query, scopes, lambda m: layer(m) and inactive(m), now)
    return sorted(found, key=lambda pair: (-pair[1], pair[0].id))[:limit]


def _inactive_ranked(
    engine: RecallEngine,
    store: MemoryStore,
    embedder: Embedder,
    query: str,
    scopes: Sequence[str],
    keep: Callable[[Memory], bool],
    now: float,
) -> Ranked:
    """The archived memories and old versions `keep` lets through, nearest first in each scope,
    scored like a one-retriever hit of the fused ranking at the same rank."""
    reduced = reduce_query(query)
    if reduced.empty:
        return []
    vector = embedder.embed_query(reduced.text)
    out: Ranked = []
    for scope in scopes:
        hits = store.inactive_search(vector, scope=scope, k=engine.config.candidates)
        near = [h.memory for h in hits if h.score >= engine.config.min_similarity and keep(h.memory)]
        for rank, memory in enumerate(near):
            weight = engine.importance_weight(memory) * engine.recency_weight(memory, now)
            out.append((memory, weight / (RRF_K + rank + 1)))
    return out
