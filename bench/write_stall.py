"""Background writes and the rest of the process: how long a store write stops every other thread.

Embedded Chroma holds the GIL for the whole of a write (`add`, `update`): while it writes, no
other thread of the process runs Python, the proxy's event loop and the recall threads included.
tap's writes in the background are extraction (a few memories per chunk), the access counts
recall notes (flushed before each consolidation, every `interval_hours`, and at shutdown) and
consolidation's archiving. This measures the longest pause a ticking thread sees (it sleeps 1 ms
in a loop: the stand-in for the event loop) while each kind of write runs, against the same
writes issued as one call, in the same run (the batched writes run as if the proxy were relaying a
request: tap.runtime.priority.HOT_PATH, so they pause between batches):

- extraction-sized `add`s (1, 5 and 20 memories), and the 200 memories of a batch of 32 chunks in
  one `add` against the batched flush of tap.extract.write_batch.WriteBuffer (WRITE_BATCH records a write);
- an access-count flush of N memories: one write (`flush_access()`, as at shutdown, and as the
  background flush was before) against the paced flush (`flush_access(paced=True)`) past its cap:
  while requests are relayed it writes nothing until more than tap.recall.engine.ACCESS_DEFERRED_MAX
  memories' counts wait, and then batches of tap.recall.engine.ACCESS_FLUSH_BATCH with a pause after
  each (tap.runtime.priority.yield_after); here the cap is 0;
- archiving N memories: one write against the paced batches of consolidation inside `tap serve`;
- deleting 500 memories (`tap memories forget`): one write against store.chroma.DELETE_BATCH ids a
  call while requests are being relayed.

Run: ``./dev bench write_stall [--memories 3000] [--flush 2000] [--quick]``. Writes
``bench/results/write_stall.json``.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import benchutil
import numpy as np

from store.chroma import ChromaStore
from store.onnx_embedder import DIMENSIONS
from tap.config import parse_config
from tap.extract.consolidation import Consolidator, Journal
from tap.extract.write_batch import WriteBuffer
from tap.recall import engine as recall_module
from tap.recall.engine import RecallEngine
from tap.records import Memory, make_memory
from tap.runtime.priority import HOT_PATH

NOW = 1_800_000_000.0
DAY = 86400.0


class Ticker:
    """A thread that sleeps 1 ms at a time and notes the longest gap between its wake-ups."""

    def __init__(self) -> None:
        self.gaps: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        last = time.perf_counter()
        while not self._stop.is_set():
            time.sleep(0.001)
            now = time.perf_counter()
            self.gaps.append(now - last)
            last = now

    def __enter__(self) -> Ticker:
        self._thread.start()
        time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@contextmanager
def watched(results: dict[str, Any], name: str) -> Iterator[None]:
    """Run the block under a ticker; note its duration and the ticker's longest and p99 gap."""
    with Ticker() as ticker:
        ticker.gaps.clear()
        started = time.perf_counter()
        yield
        seconds = time.perf_counter() - started
        time.sleep(0.01)
    gaps = ticker.gaps or [0.0]
    results[name] = {
        "seconds": round(seconds, 3),
        "longest_pause_ms": round(max(gaps) * 1000, 1),
        "pause_p99_ms": round(benchutil.percentile(gaps, 99) * 1000, 1),
    }
    benchutil.note(f"{name}: {results[name]}")


def unit_vectors(rng: np.random.Generator, n: int) -> list[list[float]]:
    vectors = rng.normal(size=(n, DIMENSIONS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors.tolist()  # type: ignore[no-any-return]


class NoEmbedder:
    """Recall is only asked to flush its access counts here: nothing is embedded."""

    model_id = "none"
    dimensions = DIMENSIONS

    def embed_query(self, text: str) -> list[float]:
        raise AssertionError("not used")

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        raise AssertionError("not used")


def flush(store: ChromaStore, ids: list[str], *, paced: bool) -> Callable[[], int]:
    engine = RecallEngine(store, NoEmbedder(), parse_config("").recall, now=lambda: NOW, access_counts=store)  # type: ignore[arg-type]
    engine._note_access(ids)

    def write() -> int:
        cap = recall_module.ACCESS_DEFERRED_MAX
        recall_module.ACCESS_DEFERRED_MAX = 0  # past the cap: what a paced flush writes under load
        try:
            return engine.flush_access(paced=paced)
        finally:
            recall_module.ACCESS_DEFERRED_MAX = cap

    return write


def run(memories: int, flushed: int) -> dict[str, Any]:
    rng = np.random.default_rng(7)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        store = ChromaStore(data_dir=home, url="", collection="stall", embedder_id="none", dimensions=DIMENSIONS)
        try:
            stored: list[Memory] = []
            for start in range(0, memories, 500):
                batch = [
                    make_memory(scope="ann", content=f"note {i}: topic {i % 97}", importance=1, now=NOW)
                    for i in range(start, min(memories, start + 500))
                ]
                store.add(batch, unit_vectors(rng, len(batch)))
                stored += batch
            for size in (1, 5, 20, 200):
                new = [make_memory(scope="ann", content=f"fresh {size} {i}", now=NOW) for i in range(size)]
                with watched(results, f"add_{size}"):
                    store.add(new, unit_vectors(rng, size))
            buffer = WriteBuffer(store)
            for i in range(200):
                memory = make_memory(scope="ann", content=f"extracted {i}", now=NOW)
                buffer.add([memory], unit_vectors(rng, 1))
            with HOT_PATH.serving(), watched(results, "extraction_flush_200_batched"):
                buffer.flush()
            ids = [m.id for m in stored[:flushed]]
            for paced in (False, True):
                write = flush(store, ids, paced=paced)
                name = f"access_flush_{flushed}_{'paced' if paced else 'one_write'}"
                with HOT_PATH.serving(), watched(results, name):
                    write()
            journal = Journal(home / "consolidate.db")
            config = parse_config("[consolidate]\narchive_after_days = 30").consolidate
            consolidator = Consolidator(store, journal, config, now=lambda: NOW + 400 * DAY)
            half = [m.id for m in stored[flushed : flushed + (memories - flushed) // 2]]
            rest = [m.id for m in stored[flushed + len(half) :]]
            for paced, ids_ in ((False, half), (True, rest)):
                with HOT_PATH.serving(), watched(results, f"archive_{len(ids_)}_{'paced' if paced else 'one_write'}"):
                    consolidator._archive(ids_, paced=paced)
            journal.close()
            for relayed in (False, True):
                doomed = [make_memory(scope="bob", content=f"to forget {relayed} {i}", now=NOW) for i in range(500)]
                store.add(doomed, unit_vectors(rng, len(doomed)))
                ids_ = [m.id for m in doomed]
                if relayed:
                    with HOT_PATH.serving(), watched(results, "delete_500_batched"):
                        store.delete(ids_)
                else:
                    with watched(results, "delete_500_one_write"):
                        store.delete(ids_)
        finally:
            store.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=3000)
    parser.add_argument("--flush", type=int, default=2000, help="access counts flushed (at most --memories)")
    parser.add_argument("--quick", action="store_true", help="300 memories, 200 counts (smoke run)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.quick:
        args.memories, args.flush = 300, 200
    flushed = min(args.flush, args.memories)
    results = run(args.memories, flushed)
    one = results[f"access_flush_{flushed}_one_write"]
    paced = results[f"access_flush_{flushed}_paced"]
    batched = results["extraction_flush_200_batched"]
    out = {
        "benchmark": "write_stall",
        "machine": benchutil.machine(),
        "method": __doc__.split("\n\n")[1].replace("\n", " "),
        "memories": args.memories,
        "writes": results,
        "access_flush_longest_pause_ratio_paced_to_one_write": round(
            paced["longest_pause_ms"] / max(one["longest_pause_ms"], 0.1), 3
        ),
        "extraction_add_longest_pause_ms": max(results[f"add_{n}"]["longest_pause_ms"] for n in (1, 5, 20)),
        "extraction_flush_200_longest_pause_ratio_batched_to_one_write": round(
            batched["longest_pause_ms"] / max(results["add_200"]["longest_pause_ms"], 0.1), 3
        ),
    }
    path = benchutil.write_result("write_stall", out, args.out)
    rows = [[name, r["seconds"], r["longest_pause_ms"], r["pause_p99_ms"]] for name, r in results.items()]
    print(benchutil.table(["write", "seconds", "longest pause ms", "pause p99 ms"], rows))
    print(f"\nwritten to {path}")


if __name__ == "__main__":
    main()
