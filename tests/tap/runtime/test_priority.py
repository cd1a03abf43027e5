"""Background threads run at a lower priority than the hot path (Linux: per-thread nice)."""

from __future__ import annotations

import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from store import onnx_embedder
from tap.extract.write_batch import VectorCache
from tap.runtime.priority import BACKGROUND_NICE, lower_thread_priority, thread_nice

linux_only = pytest.mark.skipif(sys.platform != "linux", reason="per-thread nice is Linux-only")


@linux_only
def test_only_the_calling_thread_is_lowered() -> None:
    before = thread_nice()
    with ThreadPoolExecutor(1, initializer=lower_thread_priority) as pool:
        assert pool.submit(thread_nice).result() >= BACKGROUND_NICE
    assert thread_nice() == before  # the test's own thread (and the process) keep their priority


@linux_only
def test_embedding_ahead_and_the_embedder_pool_run_lowered() -> None:
    seen: dict[str, int] = {}

    class Recorder:
        model_id, dimensions = "recorder", 3

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            seen[threading.current_thread().name] = thread_nice()
            return [[1.0, 0.0, 0.0] for _ in texts]

        def embed_query(self, text: str) -> list[float]:
            return [1.0, 0.0, 0.0]

    cache = VectorCache(Recorder())  # type: ignore[arg-type]
    cache.prefetch([["a", "b"]])
    cache.embed_documents(["a", "b"])
    assert [nice for name, nice in seen.items() if name.startswith("tap-embed-ahead")] == [BACKGROUND_NICE]

    pool = onnx_embedder._executor()
    assert all(n >= BACKGROUND_NICE for n in pool.map(lambda _: thread_nice(), range(4)))
