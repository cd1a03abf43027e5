"""Exact in-memory vectors of the active memories of scopes (embedded store only).

Embedded Chroma has one collection for every scope, and filtering it by scope scans metadata; for
a scope that is a small share of the collection the unfiltered search must over-fetch a lot, where
a dot product over the scope's vectors is exact and cheap. So ChromaStore keeps the vectors of the
scopes it searches here, loaded from the float16 copies in its lexical index and kept in step by
its own writes (it is the only writer in embedded mode; with a Chroma server this is never used).
A scope that is the whole collection too: a matrix product beats Chroma's index there as well.

Bounds: a scope is cached only while it has at most `max_scope` active memories, and all cached
scopes together hold at most `max_total` vectors (least recently searched scopes are dropped
first; the store sizes it by bytes: VECTOR_CACHE_BYTES). `Preloader` loads a scope ahead of the
search that needs it.

Thread-safe: recall threads search while the extraction worker writes; one lock guards it all.
Invariants: a cached scope holds exactly the ids and unit vectors of that scope's active memories;
a write this class cannot apply exactly (a memory active again, whose vector it does not have)
drops the scope instead, so a stale scope is never searched.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["EXACT_SCOPE_MAX", "VECTOR_CACHE_BYTES", "Preloader", "ScopeVectors"]

log = logging.getLogger(__name__)

Matrix = npt.NDArray[np.float32]


def _unit(rows: Matrix) -> Matrix:
    """Unit-length copies of float32 rows (a zero row stays zero)."""
    return _to_unit(np.array(rows, dtype=np.float32))


def _to_unit(rows: Matrix) -> Matrix:
    """Make float32 rows unit length in place (a zero row stays zero); returns them."""
    norms = np.sqrt(np.einsum("ij,ij->i", rows, rows))  # faster than linalg.norm
    norms[norms == 0] = 1.0
    rows /= norms[:, None]
    return rows


EXACT_SCOPE_MAX = 16384
"""The largest scope searched exactly in memory (a larger one is searched by Chroma)."""
VECTOR_CACHE_BYTES = 192 * 1024 * 1024
"""In-memory scope vectors (float32), all scopes together."""


class _Scope:
    """The ids and vectors of one scope; rows are packed (a removed row takes the last one)."""

    def __init__(self, ids: Sequence[str], vectors: npt.NDArray[np.floating[Any]]) -> None:
        self.ids = list(ids)
        self.rows = dict(zip(self.ids, range(len(self.ids)), strict=True))
        # room for an eighth more rows (writes) before growing; rows past len(ids) are never read
        room = len(self.ids) + max(16, len(self.ids) // 8)
        self.matrix = np.empty((room, vectors.shape[1] if len(vectors) else 0), np.float32)
        if len(self.ids):
            # converted (float16 from the lexical index) into the cache's own rows and made unit
            # length there, without intermediate copies (the conversion is most of a load)
            self.matrix[: len(self.ids)] = vectors
            _to_unit(self.matrix[: len(self.ids)])

    def __len__(self) -> int:
        return len(self.ids)

    def put(self, memory_id: str, vector: Matrix) -> None:
        if self.matrix.shape[1] == 0:
            self.matrix = np.zeros((16, vector.shape[0]), np.float32)
        row = self.rows.get(memory_id)
        if row is None:
            row = len(self.ids)
            if row == len(self.matrix):  # an eighth more (doubling held up to twice the vectors)
                grown = np.zeros((row + max(16, row // 8), self.matrix.shape[1]), np.float32)
                grown[:row] = self.matrix
                self.matrix = grown
            self.ids.append(memory_id)
            self.rows[memory_id] = row
        self.matrix[row] = _unit(vector[None, :])[0]

    def remove(self, memory_id: str) -> None:
        row = self.rows.pop(memory_id, None)
        if row is None:
            return
        last = len(self.ids) - 1
        if row != last:
            moved = self.ids[last]
            self.ids[row] = moved
            self.rows[moved] = row
            self.matrix[row] = self.matrix[last]
        self.ids.pop()

    def search(self, queries: Matrix, k: int) -> list[list[tuple[str, float]]]:
        if not self.ids or k <= 0:
            return [[] for _ in queries]
        scores = _unit(queries) @ self.matrix[: len(self.ids)].T
        take = min(k, len(self.ids))
        out: list[list[tuple[str, float]]] = []
        for row in scores:
            if take < len(row):
                # every row tying with the k-th best competes too, so which of equal vectors (the
                # passages of one assistant turn share theirs) make the cut does not depend on the
                # order rows were loaded in (a rewritten record moves to the end)
                cut = row[np.argpartition(-row, take - 1)[take - 1]]
                best = np.flatnonzero(row >= cut)
            else:
                best = np.arange(len(row))
            ranked = sorted(best.tolist(), key=lambda i: (-row[i], self.ids[i]))[:take]
            out.append([(self.ids[i], float(row[i])) for i in ranked])
        return out


class ScopeVectors:
    """The cache of small scopes' vectors (see the module docstring)."""

    def __init__(self, *, max_scope: int = 4096, max_total: int = 32768) -> None:
        self.max_scope = max_scope
        self.max_total = max_total
        self._scopes: OrderedDict[str, _Scope] = OrderedDict()
        self._scope_of: dict[str, str] = {}
        self._lock = threading.Lock()
        self._version = 0  # bumped by every write, so a load that raced a write is refused

    @property
    def version(self) -> int:
        """Read before reading a scope's ids and vectors from the store; pass it to `load`."""
        with self._lock:
            return self._version

    def cached(self, scope: str) -> bool:
        """True when the scope's vectors are here."""
        with self._lock:
            return scope in self._scopes

    def holds(self, scope: str, memory_id: str) -> bool:
        """True when the scope is cached with this memory's vector in it."""
        with self._lock:
            return self._scope_of.get(memory_id) == scope and scope in self._scopes

    def load(
        self,
        scope: str,
        ids: Sequence[str],
        vectors: Sequence[Sequence[float]] | npt.NDArray[np.floating[Any]],
        *,
        version: int,
    ) -> bool:
        """Cache a scope from its complete list of active ids and their vectors, read after
        `version` was taken; False (nothing cached) when a write happened since, or it is too big."""
        if len(ids) > self.max_scope:
            return False
        if not ids:
            matrix: npt.NDArray[np.floating[Any]] = np.zeros((0, 0), np.float32)
        elif isinstance(vectors, np.ndarray) and vectors.dtype in (np.float16, np.float32):
            matrix = vectors.reshape(len(ids), -1)  # converted once, into the cache (_Scope)
        else:
            matrix = np.asarray(vectors, dtype=np.float32).reshape(len(ids), -1)
        with self._lock:
            if version != self._version:
                return False
            self._drop(scope)
            self._scopes[scope] = _Scope(ids, matrix)
            self._scope_of.update(dict.fromkeys(ids, scope))
            self._evict()
            return scope in self._scopes

    def load_packed(self, scope: str, rows: Sequence[tuple[str, bytes]], *, version: int) -> bool:
        """`load` from (id, float16 vector bytes) rows, as the lexical index keeps them."""
        if not rows:
            return self.load(scope, [], np.zeros((0, 0), np.float32), version=version)
        matrix = np.frombuffer(b"".join(v for _, v in rows), dtype=np.float16)
        return self.load(scope, [i for i, _ in rows], matrix.reshape(len(rows), -1), version=version)

    def search(self, scope: str, queries: Sequence[Sequence[float]], k: int) -> list[list[tuple[str, float]]] | None:
        """(id, cosine) of the k nearest active memories of the scope, best first, per query; None
        when the scope is not cached (any more)."""
        with self._lock:
            entry = self._scopes.get(scope)
            if entry is None:
                return None
            self._scopes.move_to_end(scope)
            return entry.search(np.asarray(queries, dtype=np.float32), k)

    def put(self, scope: str, memory_id: str, vector: Sequence[float] | npt.NDArray[np.floating[Any]]) -> None:
        """An active memory was written with this vector."""
        with self._lock:
            self._version += 1
            entry = self._scopes.get(scope)
            if entry is None:
                return
            previous = self._scope_of.get(memory_id)
            if previous is not None and previous != scope:
                self._remove(memory_id)
            entry.put(memory_id, np.asarray(vector, dtype=np.float32))
            self._scope_of[memory_id] = scope
            if len(entry) > self.max_scope:
                self._drop(scope)
            else:
                self._evict()

    def remove(self, memory_id: str) -> None:
        """A memory was deleted or is no longer active."""
        with self._lock:
            self._version += 1
            self._remove(memory_id)

    def drop(self, scope: str) -> None:
        """Forget a scope (it is loaded again when next searched)."""
        with self._lock:
            self._version += 1
            self._drop(scope)

    def _remove(self, memory_id: str) -> None:
        scope = self._scope_of.pop(memory_id, None)
        if scope is not None and scope in self._scopes:
            self._scopes[scope].remove(memory_id)

    def _drop(self, scope: str) -> None:
        entry = self._scopes.pop(scope, None)
        if entry is not None:
            for memory_id in entry.ids:
                self._scope_of.pop(memory_id, None)

    def _evict(self) -> None:
        while self._scopes and sum(len(s) for s in self._scopes.values()) > self.max_total:
            self._drop(next(iter(self._scopes)))


class Preloader:
    """Runs a store's loading of a scope's vectors on a thread of its own, ahead of the search that
    needs them: a recall starts with its lexical lookup while the query is embedded, and the store
    starts loading the scope's vectors then, so the vector search after the embedding finds them
    loaded (or waits for that load, under the store's own lock) rather than loading them itself.
    A failed load is left for the search to meet."""

    def __init__(self, load: Callable[[str], object]) -> None:
        self._load = load
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tap-vectors-ahead")

    def start(self, scope: str) -> None:
        """Load the scope's vectors in the background (the load itself skips a scope already here)."""
        try:
            self._pool.submit(self._run, scope)
        except RuntimeError:  # closed: the store is closing
            pass

    def _run(self, scope: str) -> None:
        try:
            self._load(scope)
        except Exception as exc:  # the search meets the fault itself
            log.debug("loading the vectors of %s ahead failed: %s", scope, exc)

    def close(self) -> None:
        """Finish the load under way (milliseconds), drop the queued ones."""
        self._pool.shutdown(wait=True, cancel_futures=True)
