"""Batching for the extraction worker: buffered store writes and a vector cache.

`WriteBuffer` is the ExtractionStore extraction writes to while a batch of chunks runs: writes are
kept in memory and flushed as one `add` and one `update_metadata` (every store write has a large
fixed cost), or, while requests are being relayed, in calls of WRITE_BATCH records with a pause
after each (tap.runtime.priority). Reads see the buffered writes, so extraction behaves exactly as
if each write had gone to the store at once: `get` returns the buffered version, the searches drop
store hits whose buffered version is no longer active and add the buffered new memories.

`VectorCache` remembers the vectors of recently embedded texts (overlapping chunks repeat
sentences) and can compute vectors ahead of need (`prefetch`) on its own low-priority thread.

Invariants: after `flush()` the store holds exactly what unbuffered writes would have produced
(adds before updates); a failed flush raises and leaves the buffer intact, so the caller retries
the whole batch (memory ids are deterministic per chunk). Both are used by one worker thread at a
time (the prefetch thread only computes).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import numpy.typing as npt

from tap.ports import Embedder, ExtractionStore
from tap.records import Hit, Memory
from tap.runtime.priority import lower_thread_priority, write_parts, yield_after

__all__ = ["VectorCache", "WriteBuffer"]

WRITE_BATCH = 32
"""Records per store write of a flush while requests are relayed (embedded Chroma holds the GIL for
a whole write: tap.runtime.priority)."""

Vector = npt.NDArray[np.float32]


def _norms(rows: Vector) -> Vector:
    """Row lengths, with 1 for zero rows (a zero vector has cosine 0 with everything)."""
    norms: Vector = np.linalg.norm(rows, axis=1)
    norms[norms == 0] = 1.0
    return norms


class WriteBuffer:
    """The ExtractionStore extraction writes to while a batch runs: holds writes until `flush()`
    (see the module docstring)."""

    def __init__(self, store: ExtractionStore) -> None:
        self.store = store
        self._added: dict[str, tuple[Memory, Vector]] = {}
        self._updated: dict[str, Memory] = {}

    def __len__(self) -> int:
        return len(self._added) + len(self._updated)

    def add(self, memories: Sequence[Memory], vectors: Sequence[Sequence[float]]) -> None:
        """Buffer new memories with their vectors."""
        if len(memories) != len(vectors):
            raise ValueError("one vector per memory")
        for memory, vector in zip(memories, vectors, strict=True):
            self._updated.pop(memory.id, None)
            self._added[memory.id] = (memory, np.asarray(vector, dtype=np.float32))

    def update_metadata(self, memories: Sequence[Memory]) -> None:
        """Buffer new records of existing (stored or buffered) memories."""
        for memory in memories:
            if memory.id in self._added:
                self._added[memory.id] = (memory, self._added[memory.id][1])
            else:
                self._updated[memory.id] = memory

    def _buffered(self, memory_id: str) -> Memory | None:
        if memory_id in self._added:
            return self._added[memory_id][0]
        return self._updated.get(memory_id)

    def get(self, ids: Sequence[str]) -> list[Memory]:
        """Buffered versions first, then the store."""
        missing = [i for i in ids if self._buffered(i) is None]
        stored = {m.id: m for m in self.store.get(missing)} if missing else {}
        found = [self._buffered(i) or stored.get(i) for i in ids]
        return [m for m in found if m is not None]

    def get_active(self, ids: Sequence[str]) -> list[Memory]:
        """`get`, active ones only (buffered versions first)."""
        return [m for m in self.get(ids) if m.active]

    def search_vectors(
        self, vectors: Sequence[Sequence[float]], *, scope: str, k: int, at_least: int | None = None
    ) -> list[list[Hit]]:
        """The store's hits as the buffer changed them, merged with buffered new memories (ranked
        by cosine): one store query, one matrix product for the buffer."""
        if not vectors:
            return []
        retired = sum(1 for m in self._updated.values() if m.scope == scope and not m.active)
        floor = None if at_least is None else at_least + retired
        stored = self.store.search_vectors(vectors, scope=scope, k=k + retired, at_least=floor)
        fresh = [(m, v) for m, v in self._added.values() if m.active and m.scope == scope]
        queries = np.asarray(vectors, dtype=np.float32)
        if fresh:
            matrix = np.stack([v for _, v in fresh])
            cosines = (queries @ matrix.T) / np.outer(_norms(queries), _norms(matrix))
        out: list[list[Hit]] = []
        for row, store_hits in enumerate(stored):
            hits: dict[str, Hit] = {}
            for hit in store_hits:
                current = self._buffered(hit.memory.id) or hit.memory
                if current.active and current.scope == scope:
                    hits[current.id] = Hit(memory=current, score=hit.score)
            for column, (memory, _) in enumerate(fresh):
                hits[memory.id] = Hit(memory=memory, score=float(cosines[row, column]))
            out.append(sorted(hits.values(), key=lambda h: h.score, reverse=True)[:k])
        return out

    def flush(self) -> int:
        """Write everything buffered, the adds then the updates; returns the records written.
        While requests are being relayed (tap.runtime.priority.HOT_PATH), WRITE_BATCH records a call with
        a pause after each (tap.runtime.priority.yield_after); otherwise the rest in one call (cheaper)."""
        written = len(self)
        added = list(self._added.values())
        for part in write_parts(added, WRITE_BATCH):
            began = time.perf_counter()
            self.store.add([m for m, _ in part], [v.tolist() for _, v in part])
            yield_after(began)
        for records in write_parts(list(self._updated.values()), WRITE_BATCH):
            began = time.perf_counter()
            self.store.update_metadata(records)
            yield_after(began)
        self._added.clear()
        self._updated.clear()
        return written

    def search_text(self, queries: Sequence[str], *, scope: str, k: int, prefix: bool = False) -> list[list[Hit]]:
        """For each query, the store's lexical hits as the buffer changed them, then buffered new
        memories of the scope holding every query word (score 0: the buffer keeps no BM25
        statistics)."""
        stored = self.store.search_text(queries, scope=scope, k=k, prefix=prefix)
        return [self._with_fresh(query, hits, scope, k) for query, hits in zip(queries, stored, strict=True)]

    def _with_fresh(self, query: str, stored: list[Hit], scope: str, k: int) -> list[Hit]:
        hits = [self._current(h) for h in stored]
        found = [h for h in hits if h is not None]
        words = query.lower().split()
        fresh = [
            Hit(memory=m, score=0.0)
            for m, _ in self._added.values()
            if m.active and m.scope == scope and all(w in m.content.lower() for w in words)
        ]
        return (found + fresh)[:k] if len(found) < k else found

    def active_in_slot(self, *, scope: str, slot: str) -> list[Memory]:
        """The store's slot mates as the buffer changed them, plus buffered new ones."""
        stored = [self._buffered(m.id) or m for m in self.store.active_in_slot(scope=scope, slot=slot)]
        found = {m.id: m for m in stored if m.active}
        for memory, _ in self._added.values():
            if memory.active and memory.scope == scope and memory.slot == slot:
                found[memory.id] = memory
        return list(found.values())

    def _current(self, hit: Hit) -> Hit | None:
        memory = self._buffered(hit.memory.id) or hit.memory
        return Hit(memory=memory, score=hit.score) if memory.active else None


class VectorCache:
    """An Embedder that remembers the last `size` document vectors by text, and can compute vectors
    ahead of need on a background thread (`prefetch`)."""

    def __init__(self, embedder: Embedder, size: int = 2048) -> None:
        self.embedder = embedder
        self.model_id = embedder.model_id
        self.dimensions = embedder.dimensions
        self.size = size
        self.hits = 0
        self._vectors: OrderedDict[str, Vector] = OrderedDict()
        self._pending: dict[str, Future[dict[str, Vector]]] = {}
        self._ahead: ThreadPoolExecutor | None = None

    def prefetch(self, groups: Sequence[Sequence[str]]) -> None:
        """Start embedding each group of texts (in order, one group at a time, each group spread
        over the embedder's threads) while the caller goes on; `embed_documents` then waits only
        for the group that holds its texts. A group that fails is computed again when asked for."""
        if self._ahead is None:
            self._ahead = ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="tap-embed-ahead", initializer=lower_thread_priority
            )
        for group in groups:
            texts = [t for t in dict.fromkeys(group) if t not in self._vectors and t not in self._pending]
            if texts:
                future = self._ahead.submit(self._compute, texts)
                self._pending.update(dict.fromkeys(texts, future))

    def _compute(self, texts: list[str]) -> dict[str, Vector]:
        vectors = self.embedder.embed_documents(texts)
        return {t: np.asarray(v, dtype=np.float32) for t, v in zip(texts, vectors, strict=True)}

    def _collect(self, text: str) -> bool:
        """Move a prefetched vector into the cache; False when it was not prefetched or failed."""
        future = self._pending.pop(text, None)
        if future is None:
            return False
        try:
            self._vectors[text] = future.result()[text]
        except Exception:  # the caller computes it again and meets the fault itself
            return False
        return True

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Cached or prefetched vectors, computing the missing ones in one call."""
        missing = list(dict.fromkeys(t for t in texts if t not in self._vectors and not self._collect(t)))
        self.hits += len(texts) - len(missing)
        if missing:
            for text, vector in zip(missing, self.embedder.embed_documents(missing), strict=True):
                self._vectors[text] = np.asarray(vector, dtype=np.float32)
        result: list[list[float]] = []
        for text in texts:
            self._vectors.move_to_end(text)
            result.append(self._vectors[text].tolist())
        while len(self._vectors) > self.size:
            self._vectors.popitem(last=False)
        return result

    def discard_pending(self) -> None:
        """Forget prefetched vectors nobody asked for (their computation still finishes)."""
        self._pending.clear()

    def embed_query(self, text: str) -> list[float]:
        """Queries are not cached (one-off)."""
        return self.embedder.embed_query(text)
