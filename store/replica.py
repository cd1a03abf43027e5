"""A read view of the embedded store for recall in another process (tap.wiring.recall_process).

Everything recall reads of the *active* memories is in the lexical index's SQLite file: the FTS5
index, each record, each vector (float16). Another process can read that file while `tap serve`
writes it (WAL: a reader sees the last commit and never blocks the writer), so this view answers
the searches of tap.recall.engine from the file and its own in-memory state: the lexical index's counts,
frequencies, postings and records (store.lexical, `read_only`) and the scopes' vectors
(store.scope_vectors). The writer tells it what each committed write changed (store.lexical.
Committed, sent by the parent process in order with the recalls it asks for), and `follow` drops
what it kept of those ids, terms and scopes, which are read again as needed, so a recall asked for
after a write (a forget included) sees it.

What the file does not hold is asked of the writer: superseded versions (`get`, for the history
lines; cached by the recall engine, they never change). A scope this view cannot search exactly in
memory (bigger than `exact_scope_max`, or with vectors the index lacks) raises `NotHere`: that
recall runs in the writer's process instead.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec
import numpy as np

from store.lexical import Committed, LexicalIndex
from store.scope_vectors import Preloader, ScopeVectors
from tap.records import Hit, Memory

__all__ = ["NotHere", "ReplicaStore"]

_decode = msgspec.json.Decoder(Memory).decode


class NotHere(Exception):
    """This view cannot answer the search (the writer's process can)."""


class ReplicaStore:
    """A RecallStore (tap.ports) answered from the lexical index file (see the module docstring)."""

    def __init__(
        self,
        lexical_path: Path,
        *,
        exact_scope_max: int,
        max_vectors: int,
        versions: Callable[[Sequence[str]], list[Memory]],
    ) -> None:
        self._lexical = LexicalIndex(lexical_path, read_only=True)
        self._vectors = ScopeVectors(max_scope=exact_scope_max, max_total=max_vectors)
        self._versions = versions
        self._revisions: Counter[str] = Counter()
        self._epoch = 0
        self._lock = threading.Lock()  # revisions, and one scope's vectors loaded at a time
        self._preloader = Preloader(self._load_when_kept)

    def follow(self, committed: Committed) -> None:
        """Catch up with a write the writer committed (idempotent: see LexicalIndex.follow)."""
        self._lexical.follow(committed)
        with self._lock:
            if committed.cleared:
                self._epoch += 1
                self._vectors = ScopeVectors(max_scope=self._vectors.max_scope, max_total=self._vectors.max_total)
                return
            for scope in committed.scopes:
                self._revisions[scope] += 1
        if committed.ids:
            present = self._lexical.vectors_of(list(committed.ids))
            for memory_id in committed.ids:
                self._vectors.remove(memory_id)
                found = present.get(memory_id)
                if found is None:
                    continue
                scope, vector = found
                if vector is None:
                    self._vectors.drop(scope)  # reloaded (or refused) at its next search
                else:
                    self._vectors.put(scope, memory_id, np.frombuffer(vector, dtype=np.float16).astype(np.float32))

    def warm(self) -> int:
        """Load the largest scopes' vectors that fit in memory and start reading what BM25 from kept
        postings needs (store.bm25), as `tap serve` does at start (ChromaStore.warm_vectors): the
        first recalls of a scope must not be the slow ones (their time is what admission plans
        with, tap.recall.admission). How many scopes were loaded."""
        self._lexical.warm()
        room = self._vectors.max_total
        loaded = 0
        for scope, size in sorted(self._lexical.scope_sizes().items(), key=lambda pair: -pair[1]):
            if size > min(room, self._vectors.max_scope):
                continue
            with self._lock:
                ready = self._vectors.cached(scope) or self._load(scope)
            if ready:
                loaded += 1
                room -= size
        return loaded

    def revision(self, scope: str) -> int:
        """Changes whenever a write the writer told of touched the scope (the recall cache's key)."""
        with self._lock:
            return self._epoch + self._revisions[scope]

    def search_text(self, queries: Sequence[str], *, scope: str, k: int, prefix: bool = False) -> list[list[Hit]]:
        """BM25 over the scope's active memories, as the writer's store ranks them; the scope's
        vectors, when not here yet, start loading meanwhile (as ChromaStore.search_text)."""
        if not queries:
            return []
        if not self._vectors.cached(scope):
            self._preloader.start(scope)
        ranked = self._lexical.search_many(queries, scope=scope, k=k, prefix=prefix)
        records = self._lexical.records(list({i for hits in ranked for i, _ in hits}))
        return [[Hit(memory=_decode(records[i]), score=s) for i, s in hits if i in records] for hits in ranked]

    def _load_when_kept(self, scope: str) -> None:
        """Load the scope's vectors when this view searches them and they are not here yet."""
        if not self._vectors.cached(scope) and 0 < self._lexical.count(scope) <= self._vectors.max_scope:
            with self._lock:
                if not self._vectors.cached(scope):
                    self._load(scope)

    def search_vectors(
        self, vectors: Sequence[Sequence[float]], *, scope: str, k: int, at_least: int | None = None
    ) -> list[list[Hit]]:
        """The exact nearest active memories of the scope for each vector (cosine similarity)."""
        if not vectors:
            return []
        in_scope = self._lexical.count(scope)
        if in_scope == 0 or k <= 0:
            return [[] for _ in vectors]
        if in_scope > self._vectors.max_scope:
            raise NotHere(f"scope of {in_scope} memories is searched by Chroma")
        ranked = self._vectors.search(scope, vectors, min(k, in_scope))
        if ranked is None:
            with self._lock:
                ranked = self._vectors.search(scope, vectors, min(k, in_scope))
                if ranked is None and self._load(scope):
                    ranked = self._vectors.search(scope, vectors, min(k, in_scope))
            if ranked is None:
                raise NotHere("the scope's vectors could not be loaded here")
        records = self._lexical.records(list({i for hits in ranked for i, _ in hits}))
        return [[Hit(memory=_decode(records[i]), score=s) for i, s in hits if i in records] for hits in ranked]

    def _load(self, scope: str) -> bool:
        """Cache the scope's vectors from the file (caller holds the lock); False when some are
        missing there (an index from before that column: the writer's store fills them in) or a
        write raced the read."""
        version = self._vectors.version
        rows = self._lexical.vectors(scope)
        packed = [(i, v) for i, v in rows if v is not None]
        if len(rows) > self._vectors.max_scope or len(packed) < len(rows):
            return False
        return self._vectors.load_packed(scope, packed, version=version)

    def get_active(self, ids: Sequence[str]) -> list[Memory]:
        """The active memories among these ids, in the order asked."""
        if not ids:
            return []
        records = self._lexical.records(list(dict.fromkeys(ids)))
        return [_decode(records[i]) for i in ids if i in records]

    def get(self, ids: Sequence[str]) -> list[Memory]:
        """Memories by id, superseded ones included: active ones from the file, the rest from the
        writer (the history lines' older versions)."""
        if not ids:
            return []
        active = {m.id: m for m in self.get_active(ids)}
        missing = [i for i in ids if i not in active]
        older = {m.id: m for m in self._versions(missing)} if missing else {}
        return [found for i in ids if (found := active.get(i) or older.get(i)) is not None]

    def close(self) -> None:
        """Close the file."""
        self._preloader.close()
        self._lexical.close()
