"""Composition root: config → adapters (embedder, store) → core services.

Only this module and the CLI pick concrete adapters; everything else receives them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

from store.chroma import ChromaStore
from store.embedders import make_embedder
from tap.config import LoadedConfig
from tap.extraction import Extraction
from tap.ingest import Ingestor
from tap.ledger import CostLedger
from tap.memories import MemoryService
from tap.ports import Embedder
from tap.providers import make_llm_provider
from tap.queue import ChunkQueue
from tap.recall import RecallEngine
from tap.worker import ExtractionWorker


@dataclass
class Runtime:
    """Everything a command or the server needs, opened once and closed together."""

    loaded: LoadedConfig
    embedder: Embedder
    store: ChromaStore
    recall: RecallEngine
    memories: MemoryService
    queue: ChunkQueue
    ledger: CostLedger
    ingestor: Ingestor
    worker: ExtractionWorker

    def close(self) -> None:
        """Flush pending access counts and release the store and the queue."""
        try:
            self.recall.flush_access()
        finally:
            self.recall.close()
            self.queue.close()
            self.ledger.close()
            self.store.close()


def open_runtime(loaded: LoadedConfig) -> Runtime:
    """Build the embedder, open the store and wire the recall engine and memory service."""
    config = loaded.config
    loaded.data_dir.mkdir(parents=True, exist_ok=True)
    embedder = make_embedder(config.embedder)
    store = ChromaStore(
        data_dir=loaded.data_dir,
        url=config.store.url,
        collection=config.store.collection,
        embedder_id=embedder.model_id,
        dimensions=embedder.dimensions,
    )
    recall = RecallEngine(store, embedder, config.recall)
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
    )
    worker = ExtractionWorker(queue, extraction, extract, flush_idle_s=extract.flush_after_s)
    return Runtime(
        loaded,
        embedder,
        store,
        recall,
        MemoryService(store, embedder, recall, queue=queue),
        queue,
        ledger,
        Ingestor(queue),
        worker,
    )


@contextlib.contextmanager
def runtime(loaded: LoadedConfig) -> Iterator[Runtime]:
    """open_runtime() as a context manager."""
    rt = open_runtime(loaded)
    try:
        yield rt
    finally:
        rt.close()
