"""Fast fakes that behave, behind the same Protocols as the real adapters (tap.ports).

- `HashEmbedder`: a deterministic hashed bag of words (plus the words' character trigrams), so
  texts that share words really are close and unrelated texts are not; no model is loaded.
- `InMemoryStore`: a `MemoryStore` in dicts: cosine ranking over the active memories of a scope,
  BM25 over their words, the same listing filters and orders as `store.chroma.ChromaStore`.

Both are exercised by the same contract tests as the real ones (tests/store/test_store_contract.py,
tests/store/test_embedder_contract.py), so a test that runs on them tests tap, not the fake. They
keep nothing on disk: a test about restarts or the store's files uses the real ones.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import msgspec

from tap.config import LoadedConfig
from tap.ports import Embedder, MemoryStore, StoreStats
from tap.records import Hit, Memory

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_STOP = frozenset(
    "a an and are as at be been but by did do does for from had has have he her his how i if in into is "
    "it its me my of on or our she so that the their them then there these they this to was we were "
    "what when where which who whom why will with would you your".split()
)


def _stem(word: str) -> str:
    """A crude suffix stripper (live/lives/living/lived → liv), enough for word overlap to survive
    inflection; the real lexical index uses FTS5's porter stemmer."""
    for suffix in ("ing", "ies", "ed", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix) and not word.endswith("ss"):
            word = word[: -len(suffix)] + ("y" if suffix == "ies" else "")
            break
    return word[:-1] if len(word) > 3 and word.endswith("e") else word


def terms(text: str) -> list[str]:
    """Lower-cased, stemmed words that are not stop words, in order (repeats kept)."""
    return [_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP]


class HashEmbedder:
    """Embedder: each word and its character trigrams hashed into `dimensions` signed buckets,
    L2-normalised. Identical texts get identical vectors; shared words give a high cosine."""

    def __init__(self, dimensions: int = 256) -> None:
        self.dimensions = dimensions
        self.model_id = f"hash-bow-{dimensions}"
        self.calls = 0

    def _bucket(self, feature: str) -> tuple[int, float]:
        digest = hashlib.blake2b(feature.encode("utf-8", "surrogatepass"), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        return value % self.dimensions, 1.0 if value >> 63 else -1.0

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * self.dimensions
        for word in terms(text):
            index, sign = self._bucket("w:" + word)
            vector[index] += sign
            padded = f"<{word}>"
            for n in range(len(padded) - 2):
                index, sign = self._bucket("c:" + padded[n : n + 3])
                vector[index] += 0.25 * sign
        norm = math.sqrt(sum(x * x for x in vector))
        if norm == 0:
            vector[0] = 1.0  # no words: one fixed direction, still unit length
            return vector
        return [x / norm for x in vector]

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors for texts that will be stored."""
        self.calls += 1
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        """The vector for one search query."""
        self.calls += 1
        return self._vector(text)

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors for several queries in one call, each as `embed_query` gives it."""
        self.calls += 1
        return [self._vector(t) for t in texts]


_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(Memory).decode


def _copy(memory: Memory) -> Memory:
    """A deep copy: like a real store, the fake keeps values, not the caller's objects."""
    return _decode(_encode(memory))


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


class InMemoryStore:
    """MemoryStore in memory: every record and vector in dicts, searches computed exactly."""

    def __init__(self, *, embedder_id: str = "hash-bow-256", where: str = "memory") -> None:
        self.embedder_id = embedder_id
        self.where = where
        self.url = ""
        self._memories: dict[str, Memory] = {}
        self._vectors: dict[str, list[float]] = {}
        self._revisions: Counter[str] = Counter()
        self.closed = False

    def _changed(self, scopes: Iterable[str]) -> None:
        for scope in set(scopes):
            self._revisions[scope] += 1

    def revision(self, scope: str) -> int:
        """Changes with every write that touches the scope."""
        return self._revisions[scope]

    def add(self, memories: Sequence[Memory], vectors: Sequence[Sequence[float]]) -> None:
        """Insert or replace memories with their vectors."""
        if len(memories) != len(vectors):
            raise ValueError("one vector per memory")
        for memory, vector in zip(memories, vectors, strict=True):
            self._memories[memory.id] = _copy(memory)
            self._vectors[memory.id] = [float(x) for x in vector]
        self._changed(m.scope for m in memories)

    def update_metadata(self, memories: Sequence[Memory]) -> None:
        """Rewrite the records of existing memories (vectors unchanged; unknown ids ignored)."""
        for memory in memories:
            if memory.id in self._memories:
                self._memories[memory.id] = _copy(memory)
        self._changed(m.scope for m in memories)

    def get(self, ids: Sequence[str]) -> list[Memory]:
        """The memories with these ids that exist, in the order asked."""
        return [_copy(self._memories[i]) for i in ids if i in self._memories]

    def get_active(self, ids: Sequence[str]) -> list[Memory]:
        """The active memories among these ids, in the order asked."""
        return [m for m in self.get(ids) if m.active]

    def _active(self, scope: str) -> list[Memory]:
        return [m for m in self._memories.values() if m.scope == scope and m.active]

    def active_ids(self, scope: str) -> list[str]:
        """Every active memory id of the scope."""
        return [m.id for m in self._active(scope)]

    def _nearest(self, vector: Sequence[float], scope: str, k: int) -> list[Hit]:
        if k <= 0:
            return []
        scored = [Hit(memory=m, score=_cosine(vector, self._vectors[m.id])) for m in self._active(scope)]
        scored.sort(key=lambda h: (-h.score, h.memory.id))
        return [Hit(memory=_copy(h.memory), score=h.score) for h in scored[:k]]

    def search_vectors(
        self, vectors: Sequence[Sequence[float]], *, scope: str, k: int, at_least: int | None = None
    ) -> list[list[Hit]]:
        """The active memories of the scope nearest to each vector (cosine similarity; always
        complete: `at_least` changes nothing here)."""
        return [self._nearest(v, scope, k) for v in vectors]

    def search_text(self, queries: Sequence[str], *, scope: str, k: int, prefix: bool = False) -> list[list[Hit]]:
        """Active memories of the scope by BM25 over their words, for each query."""
        return [self._bm25(q, scope, k, prefix) for q in queries]

    def _bm25(self, query: str, scope: str, k: int, prefix: bool) -> list[Hit]:
        """BM25 with k1 1.2, b 0.75."""
        wanted = list(dict.fromkeys(terms(query)))
        docs = [(m, Counter(terms(m.index_text))) for m in self._active(scope)]
        if not wanted or not docs or k <= 0:
            return []
        average = sum(sum(c.values()) for _, c in docs) / len(docs) or 1.0

        def count(words: Counter[str], term: str) -> int:
            return sum(n for w, n in words.items() if w.startswith(term)) if prefix else words.get(term, 0)

        hits: list[Hit] = []
        for memory, words in docs:
            length = sum(words.values())
            score = 0.0
            for term in wanted:
                tf = count(words, term)
                if tf:
                    df = sum(1 for _, other in docs if count(other, term))
                    idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
                    score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / average))
            if score > 0:
                hits.append(Hit(memory=memory, score=score))
        hits.sort(key=lambda h: (-h.score, h.memory.id))
        return [Hit(memory=_copy(h.memory), score=h.score) for h in hits[:k]]

    def active_in_slot(self, *, scope: str, slot: str) -> list[Memory]:
        """Active memories of the scope that fill the slot."""
        return [_copy(m) for m in self._active(scope) if slot and m.slot == slot]

    def in_conflict(self, *, scope: str | None) -> list[Memory]:
        """Active memories (of a scope, or all) naming another in `conflicts_with`."""
        return [_copy(m) for m in self._memories.values() if m.active and m.conflicts_with and scope in (None, m.scope)]

    def _listed(
        self, scope: str | None, include_superseded: bool, excerpts: bool | None, archived: bool | None
    ) -> list[Memory]:
        out = []
        for m in self._memories.values():
            if scope is not None and m.scope != scope:
                continue
            if not include_superseded and not m.current:
                continue
            if archived is True and not m.archived or archived is False and m.archived:
                continue
            if excerpts is not None and (m.kind == "episode") != excerpts:
                continue
            out.append(m)
        out.sort(key=lambda m: (m.created_at, m.id), reverse=True)
        return out

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
        """Memories newest first, with ChromaStore's filters."""
        return [_copy(m) for m in self._listed(scope, include_superseded, excerpts, archived)[offset : offset + limit]]

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
        for m in self._memories.values():
            if m.active:
                counts.setdefault(m.scope, [0, 0])[1 if m.kind == "episode" else 0] += 1
        return {scope: (pair[0], pair[1]) for scope, pair in sorted(counts.items())}

    def iter_memories(self, *, scope: str | None = None) -> Iterator[Memory]:
        """Every memory including superseded versions, oldest first."""
        chosen = [m for m in self._memories.values() if scope is None or m.scope == scope]
        yield from (_copy(m) for m in sorted(chosen, key=lambda m: (m.created_at, m.id)))

    def delete(self, ids: Sequence[str]) -> int:
        """Remove memories for good; how many existed."""
        existing = [i for i in dict.fromkeys(ids) if i in self._memories]
        self._changed(self._memories[i].scope for i in existing)
        for memory_id in existing:
            del self._memories[memory_id]
            del self._vectors[memory_id]
        return len(existing)

    def get_vectors(self, ids: Sequence[str]) -> dict[str, list[float]]:
        """The stored vectors of these memories (those that exist), by id."""
        return {i: list(self._vectors[i]) for i in ids if i in self._vectors}

    def inactive_search(self, vector: Sequence[float], *, scope: str, k: int) -> list[Hit]:
        """The scope's superseded and archived memories nearest to the vector."""
        hits = [
            Hit(memory=m, score=_cosine(vector, self._vectors[m.id]))
            for m in self._memories.values()
            if m.scope == scope and not m.active
        ]
        hits.sort(key=lambda h: (-h.score, h.memory.id))
        return [Hit(memory=_copy(h.memory), score=h.score) for h in hits[:k]]

    def status(self) -> dict[str, Any]:
        """What /tap/status shows: the active memories held."""
        return {"shared": False, "indexed": sum(1 for m in self._memories.values() if m.active)}

    def stats(self) -> StoreStats:
        """Counts by scope and kind (active memories); nothing on disk."""
        by_scope: Counter[str] = Counter()
        by_kind: Counter[str] = Counter()
        archived = 0
        for m in self._memories.values():
            archived += m.current and m.archived
            if m.active:
                by_scope[m.scope] += 1
                by_kind[m.kind] += 1
        return StoreStats(
            total=len(self._memories),
            active=sum(by_scope.values()),
            archived=archived,
            by_scope=dict(sorted(by_scope.items())),
            by_kind=dict(sorted(by_kind.items())),
            size_bytes=0,
            location=self.where,
            embedder=self.embedder_id,
        )

    def close(self) -> None:
        """Nothing to release."""
        self.closed = True


def fake_adapters(loaded: LoadedConfig) -> tuple[Embedder, MemoryStore]:
    """A HashEmbedder and an empty InMemoryStore built for it (tap.wiring.runtime.open_runtime's `adapters`)."""
    embedder = HashEmbedder()
    return embedder, InMemoryStore(embedder_id=embedder.model_id, where=f"memory (for {loaded.data_dir})")


def real_embedder_in_memory(loaded: LoadedConfig) -> tuple[Embedder, MemoryStore]:
    """The configured (real) embedder with an InMemoryStore: for tests of what the embedder's
    similarities decide (reconcile, consolidation, recall ranking) that need no Chroma."""
    from store.embedders import make_embedder

    embedder = make_embedder(loaded.config.embedder)
    return embedder, InMemoryStore(embedder_id=embedder.model_id, where=f"memory (for {loaded.data_dir})")
