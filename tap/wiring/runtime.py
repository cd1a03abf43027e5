"""The runtime: config → adapters (embedder, store) → the core services, opened and closed together.

A composition root: only tap.wiring and tap.cli pick concrete adapters; everything else receives
them. Tests hand `open_runtime` other adapters behind the same ports (testkit/fakes.py: an
in-memory store and a hashing embedder) through `adapters`.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from store.chroma import ChromaStore
from store.embedders import make_embedder
from store.llm import make_llm_provider
from tap.config import LoadedConfig
from tap.datadir import make_private
from tap.extract.consolidation import Consolidator, Journal
from tap.extract.costs import CostLedger
from tap.extract.pipeline import Extraction
from tap.extract.worker import ExtractionWorker
from tap.ingest.capture import TurnLog
from tap.ingest.entry import Ingestor
from tap.ingest.queue import ChunkQueue
from tap.memories.service import MemoryService
from tap.ports import Embedder, MemoryStore
from tap.recall.engine import RecallEngine
from tap.runtime.diskspace import SpaceWatch


@dataclass
class Runtime:
    """Everything a command or the server needs, opened once and closed together."""

    loaded: LoadedConfig
    embedder: Embedder
    store: MemoryStore
    recall: RecallEngine
    memories: MemoryService
    queue: ChunkQueue
    ledger: CostLedger
    ingestor: Ingestor
    worker: ExtractionWorker
    turn_log: TurnLog
    consolidator: Consolidator
    space: SpaceWatch

    def close(self) -> None:
        """Flush pending access counts and release the store and the queue."""
        try:
            self.recall.flush_access()
        finally:
            self.recall.close()
            self.queue.close()
            self.ledger.close()
            self.turn_log.close()
            self.consolidator.journal.close()
            self.store.close()


class FileHolder:
    """A ScopeHolder for a file another part of tap owns (log-tail state, Telegram history): opened
    only to forget a scope, and only when the file exists."""

    def __init__(self, name: str, path: Path, opener: Callable[[Path], Any]) -> None:
        self.name = name
        self.path = path
        self._opener = opener

    def forget_scope(self, scope: str) -> int:
        """Open the file (if it exists), forget the scope there, close it."""
        if not self.path.exists():
            return 0
        opened = self._opener(self.path)
        try:
            return int(opened.forget_scope(scope))
        finally:
            opened.close()


def scope_files(data_dir: Path) -> list[FileHolder]:
    """The bridges' files that keep something per scope (README: Security, forgetting)."""
    from bridges.hooks.hook_db import HookState
    from bridges.logtail.progress_db import OffsetStore
    from bridges.mitm.spool import SPOOL_FILE, Spool
    from bridges.telegram.db import TelegramDB

    return [
        FileHolder(OffsetStore.name, data_dir / "logtail.db", OffsetStore),
        FileHolder("agent-hook transcript state", data_dir / "hooks.db", OffsetStore),  # the hooks' own offsets
        FileHolder(HookState.name, data_dir / "hooks.db", HookState),  # sessions and prompts waiting for Stop
        FileHolder(TelegramDB.name, data_dir / "telegram.db", TelegramDB),
        FileHolder(Spool.name, data_dir / SPOOL_FILE, Spool),
    ]


Adapters = Callable[[LoadedConfig], tuple[Embedder, MemoryStore]]
"""Builds the embedder and opens the store for a config (the default: `configured_adapters`)."""


def configured_adapters(loaded: LoadedConfig) -> tuple[Embedder, MemoryStore]:
    """The embedder `[embedder]` names and the Chroma store `[store]` names, built for it."""
    config = loaded.config
    embedder = make_embedder(config.embedder)
    store = ChromaStore(
        data_dir=loaded.data_dir,
        url=config.store.url,
        collection=config.store.collection,
        embedder_id=embedder.model_id,
        dimensions=embedder.dimensions,
        space=SpaceWatch(loaded.data_dir, config.data.min_free_mb),
    )
    return embedder, store


def open_runtime(
    loaded: LoadedConfig,
    *,
    now: Callable[[], float] = time.time,
    adapters: Adapters = configured_adapters,
    warm_recall: bool = True,
) -> Runtime:
    """Build the embedder, open the store and wire the recall engine and memory service. `now` is the
    clock of everything that stamps memories (a benchmark simulates months with it); `adapters`
    builds the embedder and the store (tests pass fakes). `warm_recall`: run one query now, so that
    the first request's is not slow (a backfill, which recalls nothing, passes False and saves the
    query's session: store.onnx_embedder)."""
    config = loaded.config
    make_private(loaded.data_dir)
    embedder, store = adapters(loaded)
    recall = RecallEngine(store, embedder, config.recall, now=now, access_counts=store)
    if warm_recall:
        recall.search("warm up the embedder and the indexes", scope="tap-warm-up")  # first query is slow
    extract = config.extract
    queue = ChunkQueue(
        loaded.data_dir / "queue.db", chunk_tokens=extract.chunk_tokens, overlap_tokens=extract.overlap_tokens
    )
    ledger = CostLedger(loaded.data_dir / "queue.db")
    extraction = Extraction(
        store=store,
        embedder=embedder,
        config=extract,
        ledger=ledger,
        gate_provider=make_llm_provider(extract, "gate"),
        extract_provider=make_llm_provider(extract, "extract"),
        now=now,
    )
    worker = ExtractionWorker(queue, extraction, extract, flush_idle_s=extract.flush_after_s)
    turn_log = TurnLog(loaded.data_dir / "turnlog.db")
    journal = Journal(loaded.data_dir / "consolidate.db")
    flush = functools.partial(recall.flush_access, paced=True)  # access counts, before "not recalled for N days"
    consolidator = Consolidator(store, journal, config.consolidate, before=flush, noted=recall.pending_access, now=now)
    memories = MemoryService(
        store,
        embedder,
        recall,
        queue=queue,
        turn_log=turn_log,
        holders=[*scope_files(loaded.data_dir), journal],
        consolidator=consolidator,
        now=now,
    )
    extraction.forget = functools.partial(memories.forget, from_worker=True)  # what users ask, in the chat, to forget
    space = getattr(store, "space", None) or SpaceWatch(loaded.data_dir, config.data.min_free_mb)
    return Runtime(
        loaded, embedder, store, recall, memories, queue, ledger, Ingestor(queue), worker, turn_log, consolidator, space
    )


@contextlib.contextmanager
def runtime(loaded: LoadedConfig, *, adapters: Adapters = configured_adapters) -> Iterator[Runtime]:
    """open_runtime() as a context manager."""
    rt = open_runtime(loaded, adapters=adapters)
    try:
        yield rt
    finally:
        rt.close()
