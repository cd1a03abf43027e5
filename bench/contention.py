"""Recall while another thread keeps the GIL busy: what an overloaded `tap serve` does to a recall.

Run: ``./dev bench contention [--memories 10000] [--small-scopes 4] [--small-size 500] [--queries 60]
[--quick]``.
Writes ``bench/results/recall-contention.json`` and prints a table.

Why: in `tap serve` the event loop, which relays every chunk of every stream, shares one GIL with
the recall threads. At 64 concurrent streams on two cores the loop held it ~70 % of the time, and
a recall's wall time was mostly waiting to take it back: each time a recall lets go of the GIL (a
SQLite step, an onnxruntime run, a numpy call on a large array) it waits up to the switch interval
to get it again. So the cost of a recall under load is its CPU plus (hand-backs x wait), and the
hand-backs are what this benchmark exposes.

Method, in one process (no server, no network):
- a store built like bench/proxy.py's (bench/corpus.py, vectors passed): ``--memories`` in one
  large scope (BM25 from kept postings, vectors through Chroma's index), and ``--small-scopes``
  scopes of ``--small-size`` (BM25 by FTS5, vectors from memory), opened with open_runtime;
- the switch interval `tap serve` sets (tap.wiring.server.SWITCH_INTERVAL_S);
- per scope kind and recall mode (full, BM25-only): ``--queries`` distinct corpus questions,
  recalled one after another, first with nothing else running ("idle"), then while a second
  thread runs pure Python without pause ("busy": the worst case of a saturated event loop).
  Reported: wall and CPU time (the recall thread's own) p50 / p90, and busy/idle ratios of the
  wall time, measured in the same run.
"""

from __future__ import annotations

import argparse
import itertools
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import benchutil
import corpus

from tap.config import LoadedConfig, parse_config
from tap.wiring.runtime import Runtime, open_runtime
from tap.wiring.server import SWITCH_INTERVAL_S

LARGE_SCOPE = "bench"


def build(home: Path, memories: int, small_scopes: int, small_size: int) -> dict[str, Any]:
    """The large scope as bench/proxy.py builds it, then the small scopes."""
    built = benchutil.bench_proxy().build_store(home, memories)
    rt = open_runtime(LoadedConfig(config=parse_config(""), path=None, data_dir=home))
    try:
        pool = corpus.Corpus(rt.embedder, pool=min(1500, max(100, small_size)))
        for n in range(small_scopes):
            corpus.fill(rt.store, pool, small_size, scope=f"small-{n}")
    finally:
        rt.close()
    return {**built, "small_scopes": small_scopes, "small_size": small_size}


class Busy:
    """A thread running pure Python without pause while the block runs."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, name="busy", daemon=True)

    def _spin(self) -> None:
        while not self._stop.is_set():
            sum(range(200))

    def __enter__(self) -> Busy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def timed(recall: Callable[[str], object], questions: Iterator[str], count: int) -> dict[str, Any]:
    """Wall and CPU time of `count` recalls, one after another."""
    wall: list[float] = []
    cpu: list[float] = []
    for _ in range(count):
        question = next(questions)
        started, started_cpu = time.perf_counter(), time.thread_time()
        recall(question)
        wall.append((time.perf_counter() - started) * 1000)
        cpu.append((time.thread_time() - started_cpu) * 1000)
    return {"wall_ms": benchutil.summary_ms(wall), "cpu_ms": benchutil.summary_ms(cpu)}


def measure(rt: Runtime, scopes: dict[str, list[str]], count: int) -> dict[str, Any]:
    """Per scope kind and mode: idle, then busy (see the module docstring)."""
    questions = iter(corpus.queries(count * 8 * (1 + sum(len(s) for s in scopes.values())) + 40, seed=5))
    out: dict[str, Any] = {}
    for kind, names in scopes.items():
        for name in names:  # load each scope (vectors, postings) before timing anything
            for _ in range(5):
                rt.recall.recall(next(questions), scope=name)
        for mode in ("full", "bm25_only"):
            turns = itertools.cycle(names)

            def recall(question: str, mode: str = mode, turns: Iterator[str] = turns) -> object:
                return rt.recall.recall(question, scope=next(turns), lexical_only=mode == "bm25_only")

            idle = timed(recall, questions, count)
            with Busy():
                busy = timed(recall, questions, count)
            ratio = {
                q: round(busy["wall_ms"][q] / idle["wall_ms"][q], 2) if idle["wall_ms"][q] else None
                for q in ("p50", "p95")
            }
            out[f"{kind}/{mode}"] = {"idle": idle, "busy": busy, "busy_over_idle_wall": ratio}
            benchutil.note(f"{kind}/{mode}: idle p50 {idle['wall_ms']['p50']} ms, busy {busy['wall_ms']['p50']} ms")
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="tap-bench-contention-") as tmp:
        home = Path(tmp) / "home"
        if args.store:
            shutil.copytree(args.store, home)
            built: dict[str, Any] = {"copied_from": str(args.store)}
        else:
            built = build(home, args.memories, args.small_scopes, args.small_size)
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        rt = open_runtime(LoadedConfig(config=parse_config(""), path=None, data_dir=home))
        try:
            small = [f"small-{n}" for n in range(args.small_scopes)]
            scopes = {"large": [LARGE_SCOPE], **({"small": small} if small else {})}
            results = measure(rt, scopes, args.queries)
        finally:
            rt.close()
    return {
        "benchmark": "contention",
        "machine": benchutil.machine(),
        "switch_interval_s": SWITCH_INTERVAL_S,
        "store": built,
        "method": "in process; per scope kind and mode, distinct corpus questions one after another, idle, "
        "then while another thread runs pure Python without pause (bench/contention.py)",
        "results": results,
    }


def print_report(result: dict[str, Any]) -> None:
    rows = []
    for name, entry in result["results"].items():
        idle, busy = entry["idle"], entry["busy"]
        rows.append(
            [
                name,
                idle["wall_ms"]["p50"],
                idle["cpu_ms"]["p50"],
                busy["wall_ms"]["p50"],
                busy["wall_ms"]["p95"],
                busy["cpu_ms"]["p50"],
                entry["busy_over_idle_wall"]["p50"],
            ]
        )
    print("recall with another thread busy in Python (ms)")
    headers = ["scope/mode", "idle p50", "idle CPU", "busy p50", "busy p95", "busy CPU", "busy/idle"]
    print(benchutil.table(headers, rows))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=10_000, help="memories in the large scope")
    parser.add_argument("--small-scopes", type=int, default=4)
    parser.add_argument("--small-size", type=int, default=500, help="memories in each small scope")
    parser.add_argument("--queries", type=int, default=60, help="recalls per scope kind, mode and condition")
    parser.add_argument("--store", type=Path, default=None, help="copy this data dir instead of building one")
    parser.add_argument("--quick", action="store_true", help="300 + 2 x 100 memories, 5 recalls each (smoke run)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if args.quick:
        args.memories, args.small_scopes, args.small_size, args.queries = 300, 2, 100, 5
    result = run(args)
    print_report(result)
    print(f"\nwritten to {benchutil.write_result('recall-contention', result, args.out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
