"""Small interfaces between the core and its adapters (docs/architecture.md, Layers).

The core sees adapters only through Protocols; the composition roots (tap.wiring, tap.cli) pick
them. Here: `Embedder` (store.onnx_embedder, store.ollama_embedder) and the store's ports, each
what one part of the core uses: `RecallStore` (recall: a `MemoryReader` plus a change token),
`ExtractionStore` (reader, `MemoryWriter`, `SlotLookup`), `MemoryCatalog` and `StoreAdmin` (the
user's view, upkeep); `MemoryStore` is all of them (store.chroma). How a store makes its searches
fast (what it loads, warms or batches) is the adapter's business, not a port's. The model ports
live beside what they return: `LLMProvider` in tap.llm.contract, `ReplyModel` in
tap.intercept.reply_model.

The store and embedder methods are synchronous: the backends are blocking libraries, and async
callers run them in a worker thread.
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


class MemoryReader(Protocol):
    """What recall and reconcile read: records by id, and the two searches over the active memories
    (current, not archived) of a scope. Each search takes several queries at once and answers each
    in its order: a store may do them in one round trip (one Chroma query, one index lookup)."""

    def get(self, ids: Sequence[str]) -> list[Memory]:
        """The memories with these ids that exist (superseded ones too), in the order asked."""
        ...

    def get_active(self, ids: Sequence[str]) -> list[Memory]:
        """The active memories among these ids, in the order asked, read the way searches read them."""
        ...

    def search_vectors(
        self, vectors: Sequence[Sequence[float]], *, scope: str, k: int, at_least: int | None = None
    ) -> list[list[Hit]]:
        """For each vector, the scope's k active memories nearest to it (score: cosine similarity),
        exact and in order. With `at_least` a list may be cut short, but not below that many when
        the scope has them, where completing it would cost a slower search."""
        ...

    def search_text(self, queries: Sequence[str], *, scope: str, k: int, prefix: bool = False) -> list[list[Hit]]:
        """For each query, the scope's active memories matching its words (score: BM25, higher is
        better). `prefix`: a query word also matches the words it starts ('vim' finds 'vimrc')."""
        ...


class RecallStore(MemoryReader, Protocol):
    """What recall reads: a MemoryReader that also says when a scope may have changed.

    `revision` exists for the recall engine's cache of scored candidates (an identical query asked
    again within seconds: a retry, an agent's next step): a cached answer must never outlive a
    write, a forget above all. Only the store sees every write, other processes' included (a
    shared Chroma server, the writer a recall process follows), so only it can tell."""

    def revision(self, scope: str) -> int:
        """A number that changes whenever the scope's memories may have changed."""
        ...


class MemoryWriter(Protocol):
    """How memories are written: new ones with their vectors, and new records of existing ones."""

    def add(self, memories: Sequence[Memory], vectors: Sequence[Sequence[float]]) -> None:
        """Insert new memories (or replace same-id ones) with their vectors."""
        ...

    def update_metadata(self, memories: Sequence[Memory]) -> None:
        """Rewrite the stored records of existing memories; vectors stay as they are."""
        ...


class SlotLookup(Protocol):
    """The offline rules' lookup by slot (the holder and attribute a statement fills, set by
    tap.language.rules): reconcile's slot mates come from here."""

    def active_in_slot(self, *, scope: str, slot: str) -> list[Memory]:
        """Active memories of a scope that fill the slot ("user|residence"); [] for an empty slot."""
        ...


class ExtractionStore(MemoryReader, MemoryWriter, SlotLookup, Protocol):
    """What extraction reads and writes (tap.extract.pipeline, the language rules it calls, and the
    worker's write buffer, tap.extract.write_batch)."""


class MemoryCatalog(Protocol):
    """The user's view of the store: listings, counts, export, conflicts and older versions."""

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

    def active_ids(self, scope: str) -> list[str]:
        """Every active memory id of a scope (current, not archived), in no order, from the store's
        own index: with `get_active`, a scope's active memories without a scan of the vector store."""
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
        """Active memories per scope as (statements, excerpts), scopes sorted by name."""
        ...

    def iter_memories(self, *, scope: str | None = None) -> Iterator[Memory]:
        """Every memory (superseded versions included), oldest first, for export."""
        ...

    def in_conflict(self, *, scope: str | None) -> list[Memory]:
        """Active memories (of a scope, or all) that name another in `conflicts_with`."""
        ...

    def inactive_search(self, vector: Sequence[float], *, scope: str, k: int) -> list[Hit]:
        """The scope's superseded and archived memories nearest to the vector (for explaining a
        recall afterwards, never on the hot path)."""
        ...


class StoreAdmin(Protocol):
    """Looking after the store: erasing, reading vectors back (consolidation), counting, closing."""

    embedder_id: str
    where: str
    """Where the memories live, for messages ("/home/me/.local/share/tap/chroma", a server URL)."""

    def delete(self, ids: Sequence[str]) -> int:
        """Remove memories for good, leaving no trace of them in the store's files; how many existed."""
        ...

    def get_vectors(self, ids: Sequence[str]) -> dict[str, list[float]]:
        """The stored vectors of these memories (those that exist), by id."""
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


class MemoryStore(RecallStore, ExtractionStore, MemoryCatalog, StoreAdmin, Protocol):
    """A whole store adapter: every port above. The composition roots open one and hand each part
    of the core the ports it uses.

    Adapters: store.chroma.ChromaStore; the tests' InMemoryStore (testkit/fakes.py). The recall
    process's read view (store.replica.ReplicaStore) is a RecallStore only. The contract tests
    (tests/store/test_store_contract.py) hold each of them to each port it offers.
    """
