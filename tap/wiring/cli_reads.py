"""The CLI's reads when no `tap serve` runs: from the store's read view when it answers exactly,
else from the opened store.

Opening the store (embedded Chroma, the ONNX model, the extraction pipeline) takes seconds;
`tap status`, `tap memories list|search|show|conflicts` and `tap recall` only read, and the
lexical index's file holds every active memory (store.read_view). `read(loaded, ask)` runs `ask`
on `ViewMemories` (the read operations of MemoryService the CLI uses, over that view) and, when
the view cannot answer it exactly (`NeedsStore`: old versions, archived memories, an index not
known to be in step), runs it again on the opened store's MemoryService. `ask` must only read: it
may run twice.

Differences from reading through the store, on purpose: a recall here counts no access (a look,
not a use: consolidation's "not recalled for N days" is about requests); the embedder is loaded
only by a search or a recall.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from store.embedders import embedder_id
from store.read_view import NeedsStore, ReadView
from tap.config import LoadedConfig
from tap.memories.conflicts import Conflict, live, unresolved
from tap.records import Memory, SourceTurn

if TYPE_CHECKING:
    from tap.recall.engine import RecallEngine

__all__ = ["ViewMemories", "read", "view_status"]


def open_view(loaded: LoadedConfig) -> ReadView | None:
    """The read view of the configured embedded store, or None where it cannot be used (a Chroma
    server, or an index not known to be in step)."""
    config = loaded.config
    if config.store.url:
        return None
    try:
        return ReadView(
            loaded.data_dir / f"lexical-{config.store.collection}.db", embedder_id=embedder_id(config.embedder)
        )
    except NeedsStore:
        return None


class ViewMemories:
    """MemoryService's read operations the CLI uses, over a ReadView (NeedsStore where it cannot)."""

    def __init__(self, loaded: LoadedConfig, view: ReadView) -> None:
        self.loaded = loaded
        self.view = view

    @functools.cached_property
    def recall_engine(self) -> RecallEngine:
        """The recall engine over the view (the embedder is loaded here, on the first search)."""
        from store.embedders import make_embedder
        from tap.recall.engine import RecallEngine  # a listing needs neither

        embedder = make_embedder(self.loaded.config.embedder, queries_only=True)
        return RecallEngine(self.view.searcher(), embedder, self.loaded.config.recall, workers=1)  # counts no access

    def list_memories(self, *, scope: str | None, limit: int = 50, offset: int = 0, **filters: Any) -> list[Memory]:
        """As MemoryService.list_memories."""
        all_versions = bool(filters.pop("all_versions", False))
        found = self.view.list_memories(
            scope=scope, limit=limit, offset=offset, include_superseded=all_versions, **filters
        )
        return live(found, self.view.get_active)  # a partner not active is no conflict

    def count_memories(self, *, scope: str | None, **filters: Any) -> int:
        """As MemoryService.count_memories."""
        all_versions = bool(filters.pop("all_versions", False))
        return self.view.count_memories(scope=scope, include_superseded=all_versions, **filters)

    def search(self, query: str, *, scope: str | None, limit: int = 20, **filters: Any) -> list[tuple[Memory, float]]:
        """As MemoryService.search, for its default filters (the active memories of both layers)."""
        if any(filters.get(key) for key in ("excerpts", "archived", "all_versions")):
            raise NeedsStore("a filtered search reads archived memories and old versions from the store")
        engine = self.recall_engine
        if scope is not None:
            found = engine.search(query, scope=scope, limit=limit)
        else:
            found = engine.search_scopes(query, list(self.view.scope_counts()), limit=limit)
        shown = live([m for m, _ in found], self.view.get_active)
        return [(m, score) for m, (_, score) in zip(shown, found, strict=True)]

    def conflicts(self, *, scope: str | None = None) -> list[Conflict]:
        """As MemoryService.conflicts (the view holds every active memory: a partner it lacks is not
        active, which ends the conflict as the store's reading does)."""
        return unresolved(self.view.in_conflict(scope=scope), self.view.get_active)

    def recall_json(self, text: str, *, scope: str, budget_tokens: int | None = None) -> dict[str, Any]:
        """As MemoryService.recall_json."""
        from tap.memories.views import recall_view

        return recall_view(self.recall_engine.recall(text, scope=scope, budget_tokens=budget_tokens))

    def history(self, memory_id: str) -> tuple[list[Memory], dict[str, list[SourceTurn]]]:
        """As MemoryService.history: the versions from the view, their turns from the turn log and
        the extraction queue, opened only to look (a file not made yet holds no turn)."""
        from tap.ingest.capture import TurnLog
        from tap.ingest.queue import ChunkQueue
        from tap.memories.history import history

        data_dir, extract = self.loaded.data_dir, self.loaded.config.extract
        sources: list[TurnLog | ChunkQueue] = []
        try:
            if (data_dir / "turnlog.db").exists():
                sources.append(TurnLog(data_dir / "turnlog.db", read_only=True))
            if (data_dir / "queue.db").exists():
                sources.append(
                    ChunkQueue(
                        data_dir / "queue.db",
                        chunk_tokens=extract.chunk_tokens,
                        overlap_tokens=extract.overlap_tokens,
                        read_only=True,
                    )
                )
            return history(self.view, sources, memory_id)
        except sqlite3.Error as exc:  # a file of an older layout: the store's runtime upgrades it
            raise NeedsStore(f"the turns are read by the store's runtime: {exc}") from exc
        finally:
            for source in sources:
                source.close()

    def close(self) -> None:
        """Stop the recall engine's threads (if a search made it) and close the view."""
        if "recall_engine" in self.__dict__:
            self.recall_engine.close()
        self.view.close()


def read[T](loaded: LoadedConfig, ask: Callable[[Any], T]) -> T:
    """`ask(memories)` on the read view, or on the opened store when the view cannot answer."""
    view = open_view(loaded)
    if view is not None:
        memories = ViewMemories(loaded, view)
        try:
            return ask(memories)
        except NeedsStore:
            pass
        finally:
            memories.close()
    from tap.wiring.runtime import runtime  # chromadb, the embedder, the pipeline: seconds

    with runtime(loaded) as rt:
        return ask(rt.memories)


def view_status(loaded: LoadedConfig) -> dict[str, Any] | None:
    """`tap status` without a server, from the files alone (None when the view cannot be used)."""
    from tap.extract.costs import CostLedger
    from tap.extract.status import extraction_status
    from tap.ingest.queue import ChunkQueue
    from tap.intercept.scopes import scope_rule

    view = open_view(loaded)
    if view is None:
        return None
    try:
        store = {"location": view.where, "active": view.active, "total": view.total, "embedder": view.embedder_id}
    finally:
        view.close()
    data_dir, config = loaded.data_dir, loaded.config
    path = data_dir / "queue.db"
    queue = ChunkQueue(
        path,
        chunk_tokens=config.extract.chunk_tokens,
        overlap_tokens=config.extract.overlap_tokens,
        read_only=path.exists(),  # a queue made by a process that ran: only look (a new one is empty)
    )
    ledger = CostLedger(path)
    try:
        extraction = extraction_status(queue, ledger, config.extract)
    except sqlite3.Error:  # a queue of an older layout: the runtime upgrades it
        return None
    finally:
        ledger.close()
        queue.close()
    return {
        "server": None,
        "store": store,
        "extraction": extraction,
        "scopes": scope_rule(by_api_key=config.proxy.scope_by_api_key),
    }
