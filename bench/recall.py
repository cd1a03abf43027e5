"""Recall speed at scale (1k, 10k, 100k memories in one scope, embedded Chroma) and `tap serve` idle RSS.

Run: ``./dev bench recall [--sizes 1000,10000,100000] [--queries 200] [--quick]``. Writes
``bench/results/recall.json`` and prints a table.

Method: one data dir with the default config (embedded Chroma + the FTS5 lexical index, the ONNX
MiniLM embedder). Synthetic memories (bench/corpus.py: template texts, vectors mixed from real
MiniLM embeddings) are added in batches to one scope until each size is reached; at each size,
every query is timed end to end through ``RecallEngine.recall`` (embed + vector search + lexical
search + rank + pack, exactly what the proxy runs) and, interleaved with it, each stage alone:
``embed_query``, ``vector_search``, ``text_search``. After the 10k point (the size the speed
targets name), after the largest one and once on the empty store (the baseline), the runtime is
closed and a real ``tap serve`` process is started on that data dir; after a warm-up of recalls
through its admin API it idles for a few seconds and its VmRSS is read from /proc/PID/status
(target ≤ 400 MB at 10k memories).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import benchutil
import corpus
from chromadb.api.shared_system_client import SharedSystemClient

from tap.config import LoadedConfig, parse_config
from tap.wiring.runtime import Runtime, open_runtime
from testkit.chroma_server import ChromaServer
from testkit.serve_process import ServeProcess

SCOPE = "bench"
CONFIG = '[server]\nhost = "127.0.0.1"\n'
TARGETS = {"recall_p50_ms_at_10k": 15, "recall_p99_ms_at_10k": 40, "serve_idle_rss_mb": 400}


def open_rt(home: Path) -> Runtime:
    """The runtime on the benchmark's data dir with the default config."""
    return open_runtime(LoadedConfig(config=parse_config(CONFIG), path=None, data_dir=home))


def measure(rt: Runtime, queries: Sequence[str]) -> dict[str, Any]:
    """Per query: the end-to-end recall, then each stage alone (same query, interleaved)."""
    k = rt.loaded.config.recall.candidates
    for query in corpus.queries(10, seed=4242):  # warm-up (other questions: recall caches identical ones)
        rt.recall.recall(query, scope=SCOPE)
    e2e: list[float] = []
    embed: list[float] = []
    vector: list[float] = []
    lexical: list[float] = []
    recalled: list[int] = []
    tokens: list[int] = []
    for query in queries:
        started = time.perf_counter()
        result = rt.recall.recall(query, scope=SCOPE)
        e2e.append((time.perf_counter() - started) * 1000)
        recalled.append(len(result.memories))
        tokens.append(result.tokens)
        started = time.perf_counter()
        vec = rt.embedder.embed_query(query)
        embed.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        rt.store.search_vectors([vec], scope=SCOPE, k=k)
        vector.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        rt.store.search_text([query], scope=SCOPE, k=k)
        lexical.append((time.perf_counter() - started) * 1000)
    rt.recall.flush_access()
    return {
        "end_to_end_ms": benchutil.summary_ms(e2e),
        "embed_query_ms": benchutil.summary_ms(embed),
        "vector_search_ms": benchutil.summary_ms(vector),
        "lexical_search_ms": benchutil.summary_ms(lexical),
        "rank_pack_and_overhead_ms_p50": round(
            benchutil.percentile(e2e, 50)
            - benchutil.percentile(embed, 50)
            - benchutil.percentile(vector, 50)
            - benchutil.percentile(lexical, 50),
            2,
        ),
        "memories_per_block_mean": round(statistics.fmean(recalled), 1),
        "block_tokens_mean": round(statistics.fmean(tokens), 1),
        "turn_length": turn_lengths(rt, queries),
    }


def pasted(rng: random.Random, chars: int) -> str:
    """A pasted log/code block of about `chars` characters (seeded, never twice the same)."""
    lines: list[str] = []
    while sum(len(line) + 1 for line in lines) < chars:
        n = rng.randint(1, 99999)
        lines.append(
            rng.choice(
                (
                    f"2025-03-{n % 28 + 1:02d} 12:{n % 60:02d}:07 ERROR worker-{n % 7} request {n} failed: timeout",
                    f"    at com.example.service.Handler.process(Handler.java:{n % 400})",
                    f"def step_{n}(payload):\n    return transform(payload, retries={n % 5})",
                    f"GET /api/v2/items/{n}?expand=owner 200 {n % 900}ms",
                )
            )
        )
    return "\n".join(lines)


def turn_lengths(rt: Runtime, queries: Sequence[str]) -> dict[str, Any]:
    """Recall of ~100-character turns against ~4,000-character ones (a question with a pasted log or
    code block, half of them in a ``` fence), interleaved, each turn distinct: the bounded query
    (tap/recall/query.py) keeps the second within 1.5x of the first (issue target, p99)."""
    rng = random.Random(7)
    short_ms: list[float] = []
    long_ms: list[float] = []
    for index, query in enumerate(queries):
        short = f"{query} (#{index})".ljust(100, ".")[:100]
        fence = "```" if index % 4 < 2 else ""  # half of the pastes fenced, half not
        long = f"{query} (#{index})\n{fence}\n{pasted(rng, 3900)}\n{fence}\nwhat do you make of it?"
        for text, into in ((short, short_ms), (long, long_ms)) if index % 2 else ((long, long_ms), (short, short_ms)):
            started = time.perf_counter()
            rt.recall.recall(text, scope=SCOPE)
            into.append((time.perf_counter() - started) * 1000)
    short_s, long_s = benchutil.summary_ms(short_ms), benchutil.summary_ms(long_ms)
    return {
        "short_100_chars_ms": short_s,
        "long_4000_chars_ms": long_s,
        "ratio_p50": round(long_s["p50"] / short_s["p50"], 2),
        "ratio_p99": round(long_s["p99"] / short_s["p99"], 2),
    }


def disk_mb(home: Path) -> dict[str, float]:
    """MB on disk: the embedded Chroma directory and the lexical index (with its WAL)."""
    chroma = sum(p.stat().st_size for p in (home / "chroma").rglob("*") if p.is_file())
    lexical = sum(p.stat().st_size for p in home.glob("lexical-*") if p.is_file())
    return {"chroma": round(chroma / 2**20, 1), "lexical": round(lexical / 2**20, 1)}


def serve_rss(home: Path, queries: Sequence[str], idle_s: float, config_text: str = CONFIG) -> dict[str, Any]:
    """Start `tap serve` on the data dir, warm it up with recalls, idle, read its RSS."""
    config = home / "bench-config.toml"
    config.write_text(config_text)
    proc = ServeProcess(home, config=config)
    started = time.perf_counter()
    proc.start(timeout=120)
    startup_s = time.perf_counter() - started
    try:
        assert proc.proc is not None
        pid = proc.proc.pid
        after_start = benchutil.rss_mb(pid, tree=True)
        for query in queries:
            request = urllib.request.Request(
                proc.url + "/tap/recall",
                data=json.dumps({"text": query, "scope": SCOPE}).encode(),
                headers={"Authorization": f"Bearer {proc.token}", "Content-Type": "application/json"},
            )
            with urllib.request.urlopen(request, timeout=30) as response:
                response.read()
        time.sleep(idle_s)
        status = Path(f"/proc/{pid}/status").read_text()
        peak = next((int(line.split()[1]) / 1024 for line in status.splitlines() if line.startswith("VmHWM:")), 0.0)
        return {
            "startup_s": round(startup_s, 2),
            "rss_after_start_mb": round(after_start, 1),
            "idle_rss_mb": round(benchutil.rss_mb(pid, tree=True), 1),
            "peak_rss_mb": round(peak, 1),
            "warm_up_recalls": len(queries),
            "idle_s": idle_s,
        }
    finally:
        proc.stop()


def run(sizes: Sequence[int], n_queries: int, pool: int, idle_s: float, rss_at: Sequence[int]) -> dict[str, Any]:
    """Build the store size by size, measuring recall at each size (and `tap serve` RSS where asked)."""
    queries = corpus.queries(n_queries)
    points: list[dict[str, Any]] = []
    serve: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="tap-bench-recall-") as tmp:
        home = Path(tmp)
        rt = open_rt(home)
        try:
            if 0 in rss_at:  # the baseline: tap serve on an empty store
                rt.close()
                serve["0"] = serve_rss(home, queries[:20], idle_s)
                SharedSystemClient.clear_system_cache()
                rt = open_rt(home)
            pool_corpus = corpus.Corpus(rt.embedder, pool=pool)
            embed_batch_per_s = pool / pool_corpus.embed_s
            have = 0
            for size in sorted(sizes):
                build_s = corpus.fill(rt.store, pool_corpus, size - have, scope=SCOPE)
                written = size - have
                have = size
                point: dict[str, Any] = {
                    "memories": size,
                    "build_s": round(build_s, 1),
                    "disk_mb": disk_mb(home),
                    "writes_per_s": round(written / build_s),
                }
                point |= measure(rt, queries)
                points.append(point)
                e2e = point["end_to_end_ms"]
                benchutil.note(f"{size:>7} memories: recall p50 {e2e['p50']} ms, p99 {e2e['p99']} ms")
                if size in rss_at:
                    rt.close()
                    serve[str(size)] = serve_rss(home, queries[:20], idle_s)
                    benchutil.note(f"{size:>7} memories: tap serve idle RSS {serve[str(size)]['idle_rss_mb']} MB")
                    if size == max(sizes):
                        break
                    SharedSystemClient.clear_system_cache()  # tap serve wrote to the store meanwhile
                    rt = open_rt(home)
        finally:
            rt.close()
    return {
        "benchmark": "recall",
        "machine": benchutil.machine(),
        "store": "embedded Chroma (PersistentClient) + SQLite FTS5, one scope",
        "embedder": "all-MiniLM-L6-v2 int8 ONNX, one-thread query session",
        "method": (
            "synthetic memories (bench/corpus.py) written in batches of 2000 to one scope; at each size "
            f"{n_queries} queries timed end to end through RecallEngine.recall (default config: 40 candidates per "
            "retriever, 500-token budget) and each stage alone, interleaved; tap serve RSS: real process on the "
            f"same data dir, {min(20, n_queries)} recalls through POST /tap/recall, then {idle_s} s idle, VmRSS"
        ),
        "targets": TARGETS,
        "embed_batch_sentences_per_s": round(embed_batch_per_s, 1),
        "points": points,
        "serve": serve,
    }


def shared_lag(rt: Runtime, toml: str, other_home: Path, pool: corpus.Corpus, writes: int = 20) -> dict[str, Any]:
    """Seconds from a memory written through one process's store until another process's lexical
    index finds it (the change feed, store/changes.py): a second runtime on the same server."""
    other = open_runtime(LoadedConfig(config=parse_config(toml), path=None, data_dir=other_home))
    lags: list[float] = []
    try:
        for n in range(writes):
            memories, vectors = pool.memories(1, scope=SCOPE)
            word = f"zq{n}marker"
            memories[0].content += f" ({word})"
            started = time.perf_counter()
            rt.store.add(memories, vectors)
            while not other.store.search_text([word], scope=SCOPE, k=1)[0]:
                if time.perf_counter() - started > 30:
                    break
                time.sleep(0.01)
            lags.append(time.perf_counter() - started)
    finally:
        other.close()
    return {"writes": writes, "seconds": benchutil.summary_ms(lags, digits=3)}


def run_server_mode(size: int, n_queries: int, pool: int, idle_s: float) -> dict[str, Any]:
    """The same measurement with ``[store] url`` = a `chroma run` server started here, at one size.

    tap then filters by scope and active state inside Chroma and reads records from it (the
    embedded fast path needs the data-dir lock: with a server, other machines may write too).
    """
    queries = corpus.queries(n_queries)
    with tempfile.TemporaryDirectory(prefix="tap-bench-recall-server-") as tmp:
        server = ChromaServer(Path(tmp) / "chroma")
        server.start()
        try:
            toml = CONFIG + f'[store]\nurl = "{server.url}"\n'
            home = Path(tmp) / "home"
            rt = open_runtime(LoadedConfig(config=parse_config(toml), path=None, data_dir=home))
            try:
                pool_corpus = corpus.Corpus(rt.embedder, pool=pool)
                build_s = corpus.fill(rt.store, pool_corpus, size, scope=SCOPE)
                point: dict[str, Any] = {"memories": size, "build_s": round(build_s, 1)}
                point["writes_per_s"] = round(size / build_s)
                point |= measure(rt, queries)
                point["shared_store_lag"] = shared_lag(rt, toml, Path(tmp) / "other", pool_corpus)
            finally:
                rt.close()
            point["serve"] = serve_rss(home, queries[:20], idle_s, toml)
            assert server._proc is not None  # the test helper keeps its process private
            point["chroma_server_rss_mb"] = round(benchutil.rss_mb(server._proc.pid), 1)
        finally:
            server.stop()
    e2e = point["end_to_end_ms"]
    benchutil.note(f"{size:>7} memories, Chroma server: recall p50 {e2e['p50']} ms, p99 {e2e['p99']} ms")
    return point


def print_report(result: dict[str, Any]) -> None:
    headers = ["memories", "e2e p50", "e2e p99", "embed p50", "vector p50", "vector p99", "lexical p50", "build/s"]
    rows = [
        [
            p["memories"],
            p["end_to_end_ms"]["p50"],
            p["end_to_end_ms"]["p99"],
            p["embed_query_ms"]["p50"],
            p["vector_search_ms"]["p50"],
            p["vector_search_ms"]["p99"],
            p["lexical_search_ms"]["p50"],
            p["writes_per_s"],
        ]
        for p in result["points"]
    ]
    print("recall latency (ms), one scope, embedded Chroma")
    print(benchutil.table(headers, rows))
    for point in result["chroma_server"]:
        serve = point["serve"]
        print(
            f"with a Chroma server, {point['memories']} memories: recall p50 {point['end_to_end_ms']['p50']} ms, "
            f"p99 {point['end_to_end_ms']['p99']} ms (vector search p50 {point['vector_search_ms']['p50']} ms); "
            f"tap serve idle RSS {serve['idle_rss_mb']} MB + Chroma server {point['chroma_server_rss_mb']} MB"
        )
    for size, serve in result["serve"].items():
        print(
            f"tap serve with {size} memories: idle RSS {serve['idle_rss_mb']} MB (peak {serve['peak_rss_mb']} MB, "
            f"start-up {serve['startup_s']} s); target ≤ {TARGETS['serve_idle_rss_mb']} MB"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="comma-separated store sizes")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--pool", type=int, default=1500, help="really embedded sentences the corpus mixes")
    parser.add_argument("--idle", type=float, default=5.0, help="seconds tap serve idles before RSS is read")
    parser.add_argument(
        "--server-sizes", default="10000", help="sizes to measure with a `chroma run` server too ('' for none)"
    )
    parser.add_argument("--quick", action="store_true", help="200 memories, 20 queries (smoke run)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    server_sizes = [int(s) for s in args.server_sizes.split(",") if s.strip()]
    if args.quick:
        sizes, args.queries, args.pool, args.idle, server_sizes = [200], 20, 100, 0.5, []
    rss_at = sorted({s for s in sizes if s == 10_000} | {max(sizes)} | (set() if args.quick else {0}))
    result = run(sizes, args.queries, args.pool, args.idle, rss_at)
    result["chroma_server"] = [run_server_mode(size, args.queries, args.pool, args.idle) for size in server_sizes]
    result["mode"] = "quick" if args.quick else "full"
    path = benchutil.write_result("recall", result, args.out)
    print_report(result)
    print(f"\nwritten to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
