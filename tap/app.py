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
from tap.memories import MemoryService
from tap.ports import Embedder
from tap.recall import RecallEngine


@dataclass
class Runtime:
    """Everything a command or the server needs, opened once and closed together."""

    loaded: LoadedConfig
    embedder: Embedder
    store: ChromaStore
    recall: RecallEngine
    memories: MemoryService

    def close(self) -> None:
        """Flush pending access counts and release the store."""
        try:
            self.recall.flush_access()
        finally:
            self.recall.close()
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
    return Runtime(loaded, embedder, store, recall, MemoryService(store, embedder, recall))


@contextlib.contextmanager
def runtime(loaded: LoadedConfig) -> Iterator[Runtime]:
    """open_runtime() as a context manager."""
    rt = open_runtime(loaded)
    try:
        yield rt
    finally:
        rt.close()
