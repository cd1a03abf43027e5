"""Benchmark of the embedded ONNX embedder: batch throughput, query latency, memory.

Run: ``python bench/embed.py [--sentences 512] [--queries 200]``. Writes ``bench/results/embed.json``
and prints a short table. Inputs are generated deterministically (seeded) from chat-like templates,
5 to ~70 words each, so runs are comparable across machines and commits.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import resource
import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import benchutil  # puts the repo root on sys.path, telemetry off
import onnxruntime

from store.onnx_embedder import OnnxMiniLMEmbedder

SUBJECTS = ["I", "My sister", "The user", "Our team", "My manager", "We", "My landlord", "The client"]
FACTS = [
    "moved to Lisbon last spring and works remotely for a company in Berlin",
    "prefers Python over Java for anything that touches data pipelines",
    "is allergic to peanuts and avoids Thai restaurants because of it",
    "has a meeting with the infrastructure group every Tuesday at 3pm",
    "wants the quarterly roadmap to focus on reliability instead of new features",
    "runs a half marathon every October and trains three mornings a week",
    "uses Neovim with a custom Lua config and hates mouse-driven editors",
    "is planning a trip to Japan in April with two friends from university",
    "asked to be reminded about the dentist appointment next Thursday",
    "decided to migrate the billing service from MySQL to Postgres",
]
TAILS = [
    "",
    "and said it matters a lot.",
    "although the details are still being discussed with everyone involved.",
    "which came up again in yesterday's conversation when we were reviewing the backlog together.",
    "so please keep that in mind for any future suggestions, recommendations or plans you make, "
    "especially the ones that involve scheduling, travel, food, or the tools used at work every day.",
]


def make_sentences(count: int, seed: int) -> list[str]:
    """Varied chat-like sentences of realistic length."""
    rng = random.Random(seed)
    return [f"{rng.choice(SUBJECTS)} {rng.choice(FACTS)} {rng.choice(TAILS)}".strip() for _ in range(count)]


def rss_mb() -> float:
    """Current resident set size (Linux /proc), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_seconds() -> tuple[float, float, float]:
    """(all CPUs busy, all CPUs total, this process) in seconds since boot/start, from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]
    own = os.times()
    return (sum(fields) - idle) / ticks, sum(fields) / ticks, own.user + own.system


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def throughput(embedder: OnnxMiniLMEmbedder, sentences: list[str], runs: int = 3) -> tuple[float, float]:
    """Best-of-runs sentences/s, and the least CPU ms per sentence (all threads; robust to a busy machine)."""
    embedder.embed_documents(sentences[:32])  # warm-up
    rates, cpu_ms = [], []
    for _ in range(runs):
        cpu = time.process_time()
        rates.append(len(sentences) / timed(lambda: embedder.embed_documents(sentences)))
        cpu_ms.append(1000 * (time.process_time() - cpu) / len(sentences))
    return max(rates), min(cpu_ms)


def latencies_ms(embedder: OnnxMiniLMEmbedder, queries: list[str], cpu_ms: list[float] | None = None) -> list[float]:
    """Wall-clock ms per query; CPU ms per query appended to cpu_ms (meaningful with no other thread busy)."""
    embedder.embed_query(queries[0])  # warm-up
    result = []
    for query in queries:
        start, cpu = time.perf_counter(), time.process_time()
        embedder.embed_query(query)
        result.append(1000 * (time.perf_counter() - start))
        if cpu_ms is not None:
            cpu_ms.append(1000 * (time.process_time() - cpu))
    return result


def percentile(values: list[float], pct: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[pct - 1]


def latencies_under_load(embedder: OnnxMiniLMEmbedder, queries: list[str], docs: list[str]) -> list[float]:
    """Query latency while another thread embeds batches (the extraction worker's load)."""
    stop = threading.Event()

    def load() -> None:
        while not stop.is_set():
            embedder.embed_documents(docs[:64])

    worker = threading.Thread(target=load)
    worker.start()
    time.sleep(0.3)
    try:
        return latencies_ms(embedder, queries)
    finally:
        stop.set()
        worker.join()


def run(sentences: int, queries: int) -> dict[str, Any]:
    """Every measurement; other_cpu_pct says how busy the rest of the machine was meanwhile."""
    busy0, total0, own0 = cpu_seconds()
    rss_before = rss_mb()
    load_s = timed(lambda: OnnxMiniLMEmbedder())
    docs = make_sentences(sentences, seed=1)
    qs = make_sentences(queries, seed=2)
    embedder = OnnxMiniLMEmbedder()
    by_batch = {len(docs): throughput(embedder, docs), 32: throughput(embedder, docs[:32], runs=20)}
    query_cpu: list[float] = []
    single = latencies_ms(embedder, qs, query_cpu)
    loaded = latencies_under_load(embedder, qs, docs)
    words = [len(s.split()) for s in docs]
    busy1, total1, own1 = cpu_seconds()
    other_pct = 100 * max(0.0, (busy1 - busy0) - (own1 - own0)) / (total1 - total0)
    return {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "onnxruntime": onnxruntime.__version__,
            "other_cpu_pct": round(other_pct, 1),
        },
        "inputs": {"sentences": sentences, "words_min": min(words), "words_mean": statistics.mean(words)},
        "load_s": round(load_s, 3),
        "batch_sentences_per_s": {str(bs): round(v[0], 1) for bs, v in by_batch.items()},
        "batch_cpu_ms_per_sentence": {str(bs): round(v[1], 2) for bs, v in by_batch.items()},
        "query_ms": {
            "n": queries,
            "p50": round(percentile(single, 50), 2),
            "p95": round(percentile(single, 95), 2),
            "cpu_p50": round(percentile(query_cpu, 50), 2),
        },
        "query_under_batch_load_ms": {
            "p50": round(percentile(loaded, 50), 2),
            "p95": round(percentile(loaded, 95), 2),
        },
        "rss_mb": {
            "before_load": round(rss_before, 1),
            "after": round(rss_mb(), 1),
            "peak": round(peak_rss_mb(), 1),
        },
    }


def print_table(result: dict[str, Any]) -> None:
    rows = [
        ("other processes' CPU during run", f"{result['machine']['other_cpu_pct']}% of all cores"),
        ("model load (cold)", f"{result['load_s'] * 1000:.0f} ms"),
        *[
            (f"batch {bs}", f"{v} sentences/s, {result['batch_cpu_ms_per_sentence'][bs]} CPU ms/sentence")
            for bs, v in result["batch_sentences_per_s"].items()
        ],
        ("query p50 / p95 (CPU p50)", "{p50} / {p95} ms ({cpu_p50} ms)".format(**result["query_ms"])),
        (
            "query under batch load p50 / p95",
            f"{result['query_under_batch_load_ms']['p50']} / {result['query_under_batch_load_ms']['p95']} ms",
        ),
        ("RSS before / after / peak", "{before_load} / {after} / {peak} MB".format(**result["rss_mb"])),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sentences", type=int, default=512)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    result = run(args.sentences, args.queries)
    path = benchutil.write_result("embed", result)
    print_table(result)
    print(f"\nwritten to {path}")


if __name__ == "__main__":
    main()
