"""Small interfaces between the core and its adapters (docs/architecture.md, Layers).

The core only ever sees Protocols; the composition roots (tap.wiring, tap.cli) pick the adapters,
all of which live outside tap/. Here: `Embedder` (store.onnx_embedder, store.ollama_embedder) and
`MemoryStore` (store.chroma). The model ports live beside what they return: `LLMProvider` in
tap.llm.contract (store.llm.anthropic_provider, store.llm.ollama_provider) and `ReplyModel` in tap.intercept.reply_model
(store.llm.replies, the Telegram bot's model). The store and embedder methods are synchronous: the
backends (ONNX, Chroma) are blocking libraries, and async callers run them in a worker thread (see
tap.recall.engine.RecallEngine.recall_async).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol

import msgspec

from tap.records import Hit, Memory


class Embedder(Protocol):
    """Turns text into unit-length vectors."""

    model_id: str
    dimensions: int

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors for texts that will be stored."""
        ...

    def embed_query(self, text: str) -> list[float]:
        """The vector for one search query (lowest latency path)."""
        ...


class StoreStats(msgspec.Struct, kw_only=True):
    """Counts for `tap memories stats`."""

    total: int
    active: int
    by_scope: dict[str, int]
    by_kind: dict[str, int]
    size_bytes: int
    location: str
    embedder: str
    archived: int = 0


class RecallStore(Protocol):
    """What recall (tap.recall.engine) reads of a store, and writes (access counts): a MemoryStore, or the
    read view of the recall process (store.replica), which writes nothing."""

    def revision(self, scope: str) -> int: ...

    def text_search_many(self, queries: Sequence[str], *, scope: str, k: int) -> list[list[Hit]]: ...

    def vector_search_many(
        self, vectors: Sequence[Sequence[float]], *, scope: str, k: int, at_least: int | None = None
    ) -> list[list[Hit]]: ...

    def prepare_vector_search(self, scope: str) -> None: ...

    def get(self, ids: Sequence[str]) -> list[Memory]: ...

    def get_active(self, ids: Sequence[str]) -> list[Memory]: ...

    def update_metadata(self, memories: Sequence[Memory]) -> None: ...


class MemoryStore(Protocol):
    """Persistent memories with vectors, plus a lexical index kept in step.

    Adapters: store.chroma.ChromaStore; the tests' InMemoryStore (tests/fakes.py) passes the same
    contract tests (tests/store/test_store_contract.py).
    """

    embedder_id: str
    where: str
    """Where the memories live, for messages ("/home/me/.local/share/tap/chroma", a server URL)."""

    def add(self, memories: Sequence[Memory], vectors: Sequence[Sequence[float]]) -> None:
        """Insert new memories (or replace same-id ones) with their vectors."""
        ...

    def update_metadata(self, memories: Sequence[Memory]) -> None:
        """Rewrite the stored records of existing memories; vectors stay as they are."""
        ...

    def get(self, ids: Sequence[str]) -> list[Memory]:
        """The memories with these ids that exist, in the order asked."""
        ...

    def get_active(self, ids: Sequence[str]) -> list[Memory]:
        """The active memories among these ids, in the order asked, read the way searches read them
        (the recall path: no round trip to the vector store where the store keeps its own copy)."""
        ...

    def active_ids(self, scope: str) -> list[str]:
        """Every active memory id of a scope (current, not archived), in no order, from the store's
        own index: with `get_active`, a scope's active memories without a scan of the vector store."""
        ...

    def vector_search(self, vector: Sequence[float], *, scope: str, k: int) -> list[Hit]:
        """Active memories (current, not archived) of a scope nearest to the vector; score is cosine
        similarity."""
        ...

    def vector_search_many(
        self, vectors: Sequence[Sequence[float]], *, scope: str, k: int, at_least: int | None = None
    ) -> list[list[Hit]]:
        """`vector_search` for each vector (one round trip for all of them), in their order. Each list
        is the exact nearest hits in order; with `at_least` it may be cut short (but not below that
        many, when the scope has them) where completing it would cost a slower search."""
        ...

    def prepare_vector_search(self, scope: str) -> None:
        """Load what the scope's vector searches read, if the store keeps anything in memory for
        them (recall calls it beside the query embedding, so a scope's first search does not wait
        for it); may do nothing. Never raises for a store that is down: the search will."""
        ...

    def text_search(self, query: str, *, scope: str, k: int, prefix: bool = False) -> list[Hit]:
        """Active memories of a scope matching the query words; score is BM25 (higher = better).
        `prefix`: a query word also matches the words it starts ('vim' finds 'vimrc')."""
        ...

    def text_search_many(self, queries: Sequence[str], *, scope: str, k: int) -> list[list[Hit]]:
        """`text_search` for each query of one scope, in their order (one lookup for all of them)."""
        ...

    def revision(self, scope: str) -> int:
        """A number that changes whenever the scope's memories may have changed (writes of this
        process, and of others sharing the store once this one has seen them); for caches."""
        ...

    def active_in_slot(self, *, scope: str, slot: str) -> list[Memory]:
        """Active memories of a scope that fill the slot ("user|residence"), any part and value."""
        ...

    def in_conflict(self, *, scope: str | None) -> list[Memory]:
        """Active memories (of a scope, or all) that name another in `conflicts_with`."""
        ...

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
        """Memories newest first; all scopes when scope is None. `excerpts`: None lists both layers,
        False only statements, True only excerpts (kind episode); `archived`: None lists archived
        memories beside the others, True only them, False none of them."""
        ...

    def count_memories(
        self,
        *,
        scope: str | None,
        include_superseded: bool = False,
        excerpts: bool | None = None,
        archived: bool | None = None,
    ) -> int:
        """How many memories `list_memories` pages through with the same filter."""
        ...

    def scope_counts(self) -> dict[str, tuple[int, int]]:
        """Active memories per scope as (statements, excerpts)."""
        ...

    def iter_memories(self, *, scope: str | None = None) -> Iterator[Memory]:
        """Every memory (superseded versions included), in pages, for export."""
        ...

    def delete(self, ids: Sequence[str]) -> int:
        """Remove memories for good; returns how many existed."""
        ...

    def get_vectors(self, ids: Sequence[str]) -> dict[str, list[float]]:
        """The stored vectors of these memories (those that exist), by id."""
        ...

    def inactive_search(self, vector: Sequence[float], *, scope: str, k: int) -> list[Hit]:
        """The scope's superseded and archived memories nearest to the vector (for explaining a
        recall afterwards, never on the hot path)."""
        ...

    def purge(self) -> None:
        """Leave no trace of deleted memories in the store's files (after a forget)."""
        ...

    def warm_vectors(self) -> int:
        """Load what makes a scope's first search fast, at start in the background; how many
        scopes were loaded (0 when the store has nothing to warm)."""
        ...

    def status(self) -> dict[str, Any]:
        """What `/tap/status` shows about the store (what it indexes, how far behind it may be)."""
        ...

    def stats(self) -> StoreStats:
        """Counts by scope and kind and the size on disk."""
        ...

    def close(self) -> None:
        """Release files and locks."""
        ...
