"""Proxy overhead: the same Anthropic requests sent directly to a fake upstream and through `tap serve`.

Run: ``./dev bench proxy [--memories 10000] [--pairs 300] [--stream-pairs 100] [--quick]``. Writes
``bench/results/proxy.json`` and prints a table.

Method (three processes, so no side measures itself):
- the upstream: bench/fake_upstream.py in its own process, an aiohttp server on 127.0.0.1 speaking
  the Anthropic Messages API: non-streaming answers at once with a JSON message; streaming sends a
  realistic SSE stream (message_start, content_block_start, ping, N text deltas,
  content_block_stop, message_delta, message_stop), one event per write, ``--gap-ms`` between
  events, as the API flushes per event;
- tap: a real ``tap serve`` subprocess (testkit/serve_process.py) on a data dir holding
  ``--memories`` memories in the requests' scope (bench/corpus.py, written in batches), default
  config (recall deadline 150 ms, capture and the extraction worker on), upstream = the fake;
- the load generator: this process (aiohttp client). Every measurement is an A/B pair: the same
  request sent directly and through tap, back to back, the order alternating per pair, so both see
  the same machine noise. Added latency is p(tap) − p(direct) of the same run, and the ratio.
Streaming: time to first body byte (TTFB) and each SSE event's arrival time; gap preservation is
the difference between the tap and direct gap at the same event index of a pair, and "held back"
the difference of each event's offset from the first byte; the same measures on direct-vs-direct
pairs give the noise floor of the fake upstream's timers and the client. Throughput: 1, 16 and 64
closed-loop streaming clients, direct and through tap (which goes first alternates by level),
requests/s, errors (transport errors, non-200, a body that differs from the upstream's bytes) and
degraded recalls (``x-tap-degraded``: recall past its deadline; the request still succeeds, without
memories). ``--no-background-extraction`` repeats the run with tap's extraction worker idle (no
window is closed during the run), to separate the proxy's own cost from background extraction's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import benchutil
import corpus
from fake_upstream import stream_events

from tap.config import LoadedConfig, parse_config
from tap.wiring.runtime import open_runtime
from testkit.serve_process import ServeProcess

SCOPE = "bench"
LITELLM_MS = 3.25
LITELLM_SOURCE = "https://docs.litellm.ai/docs/proxy/perf ('LiteLLM proxy adds 0.00325 seconds latency')"
TARGETS = {"added_p50_ms": 15, "added_p99_ms": 40, "ttfb_added_minus_recall_ms": 3, "gap_ms": 2, "errors_at_64": 0}
SYSTEM = (
    "You are a helpful assistant for a small software team. Answer concisely, cite the files you touch, "
    "prefer standard-library solutions, and ask before deleting anything. " * 4
)
HISTORY = [
    {"role": "user", "content": "Morning! Can you help me plan the week? I have the release on Thursday."},
    {
        "role": "assistant",
        "content": "Of course. Let's list what has to ship by Thursday, then block time for reviews and a "
        "buffer day. What is still open on the release checklist?",
    },
    {"role": "user", "content": "Docs, the migration script and two bug fixes. Also my sister visits on Friday."},
    {
        "role": "assistant",
        "content": "Then: Monday the migration script, Tuesday the two fixes, Wednesday docs and review, "
        "Thursday release, Friday off for your sister's visit.",
    },
]


class Upstream:
    """The fake upstream subprocess."""

    def __init__(self, tmp: Path, deltas: int, gap_ms: float) -> None:
        self.port_file = tmp / "upstream.port"
        args = [sys.executable, str(Path(__file__).with_name("fake_upstream.py")), str(self.port_file)]
        args += ["--events", str(deltas)]
        self.proc = subprocess.Popen([*args, "--gap-ms", str(gap_ms)])
        deadline = time.monotonic() + 30
        while not self.port_file.exists() or not self.port_file.read_text():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the fake upstream did not start")
            time.sleep(0.05)
        self.url = f"http://127.0.0.1:{self.port_file.read_text()}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
        self.proc.wait(timeout=10)


# --- the load generator ----------------------------------------------------------------------


@dataclass
class Sample:
    """One request as the client saw it."""

    ok: bool
    total_ms: float = 0.0
    ttfb_ms: float = 0.0
    events_ms: list[float] = field(default_factory=list)
    recall_ms: float | None = None
    recalled: int = 0
    degraded: bool = False
    error: str = ""
    body: bytes = b""


def request_body(query: str, stream: bool) -> bytes:
    """An Anthropic request: system prompt, 4 turns of history, the new user message."""
    messages = [*HISTORY, {"role": "user", "content": query}]
    return json.dumps(
        {"model": "claude-bench", "max_tokens": 1024, "system": SYSTEM, "messages": messages, "stream": stream}
    ).encode()


class Client:
    """Sends the same request to a base URL and times it."""

    def __init__(self, session: aiohttp.ClientSession, base: str) -> None:
        self.session = session
        self.base = base

    async def send(self, query: str, *, stream: bool, conversation: str) -> Sample:
        headers = {
            "content-type": "application/json",
            "x-api-key": "sk-bench-not-a-key",
            "anthropic-version": "2023-06-01",
            "x-tap-scope": SCOPE,
            "x-tap-conversation": conversation,
        }
        body = request_body(query, stream)
        started = time.perf_counter()
        try:
            async with self.session.post(self.base + "/v1/messages", data=body, headers=headers) as response:
                sample = Sample(
                    ok=response.status == 200, error="" if response.status == 200 else f"HTTP {response.status}"
                )
                sample.degraded = "x-tap-degraded" in response.headers
                sample.recalled = int(response.headers.get("x-tap-recalled", "0") or 0)
                if "x-tap-recall-ms" in response.headers:
                    sample.recall_ms = float(response.headers["x-tap-recall-ms"])
                chunks: list[bytes] = []
                seen = 0
                async for chunk in response.content.iter_any():
                    now = (time.perf_counter() - started) * 1000
                    if not chunks:
                        sample.ttfb_ms = now
                    chunks.append(chunk)
                    if stream:
                        total = sum(len(c) for c in chunks)
                        joined = b"".join(chunks) if total < 1 << 20 else b""
                        count = joined.count(b"\n\n")
                        sample.events_ms += [now] * (count - seen)
                        seen = count
                sample.total_ms = (time.perf_counter() - started) * 1000
                sample.body = b"".join(chunks)
                return sample
        except (aiohttp.ClientError, TimeoutError) as exc:
            return Sample(
                ok=False, error=f"{type(exc).__name__}: {exc}", total_ms=(time.perf_counter() - started) * 1000
            )


async def ab_pairs(
    direct: Client, tap: Client, queries: Sequence[str], *, stream: bool, tag: str
) -> tuple[list[Sample], list[Sample]]:
    """Each query sent directly and through tap, back to back, alternating which goes first."""
    a: list[Sample] = []
    b: list[Sample] = []
    for index, query in enumerate(queries):
        conversation = f"{tag}-{index}"
        if index % 2 == 0:
            a.append(await direct.send(query, stream=stream, conversation=conversation))
            b.append(await tap.send(query, stream=stream, conversation=conversation))
        else:
            b.append(await tap.send(query, stream=stream, conversation=conversation))
            a.append(await direct.send(query, stream=stream, conversation=conversation))
    return a, b


def added(direct: Sequence[float], tap: Sequence[float]) -> dict[str, float]:
    """p50/p99 of both paths, added ms (tap − direct) and ratios."""
    out: dict[str, float] = {}
    for pct in (50, 95, 99):
        d, t = benchutil.percentile(direct, pct), benchutil.percentile(tap, pct)
        out[f"direct_p{pct}_ms"] = round(d, 2)
        out[f"tap_p{pct}_ms"] = round(t, 2)
        out[f"added_p{pct}_ms"] = round(t - d, 2)
        out[f"ratio_p{pct}"] = round(t / d, 2) if d else float("nan")
    return out


def gap_differences(first: Sequence[Sample], second: Sequence[Sample]) -> tuple[list[float], list[float]]:
    """|gap difference| at each event index, and the difference of each event's offset from the first
    byte (second − first), over pairs of streams with the same number of events."""
    gap_diff: list[float] = []
    held: list[float] = []
    for a, b in zip(first, second, strict=True):
        if not (a.ok and b.ok) or len(a.events_ms) != len(b.events_ms) or len(a.events_ms) < 2:
            continue
        for j in range(1, len(a.events_ms)):
            gap_diff.append(abs((b.events_ms[j] - b.events_ms[j - 1]) - (a.events_ms[j] - a.events_ms[j - 1])))
            held.append((b.events_ms[j] - b.events_ms[0]) - (a.events_ms[j] - a.events_ms[0]))
    return gap_diff, held


def gaps(direct: Sequence[Sample], tap: Sequence[Sample]) -> dict[str, Any]:
    """Inter-event gap preservation over A/B pairs, beside the same measure on direct-vs-direct pairs
    (consecutive direct streams): the noise floor of the upstream's timers and the client."""
    gap_diff, held = gap_differences(direct, tap)
    floor_diff, floor_held = gap_differences(direct[:-1], direct[1:])

    def within(values: list[float]) -> float:
        return round(sum(1 for g in values if g <= TARGETS["gap_ms"]) / len(values), 4) if values else float("nan")

    def stream_gaps(samples: Sequence[Sample]) -> list[float]:
        return [s.events_ms[j] - s.events_ms[j - 1] for s in samples if s.ok for j in range(1, len(s.events_ms))]

    return {
        "gaps_compared": len(gap_diff),
        "direct_gap_ms": benchutil.summary_ms(stream_gaps(direct)),
        "tap_gap_ms": benchutil.summary_ms(stream_gaps(tap)),
        "abs_gap_difference_ms": benchutil.summary_ms(gap_diff),
        "share_within_2ms": within(gap_diff),
        "event_offset_from_first_byte_tap_minus_direct_ms": benchutil.summary_ms(held),
        "noise_floor_direct_vs_direct": {
            "abs_gap_difference_ms": benchutil.summary_ms(floor_diff),
            "share_within_2ms": within(floor_diff),
            "event_offset_difference_ms": benchutil.summary_ms(floor_held),
        },
    }


async def load(client: Client, queries: Sequence[str], concurrency: int, total: int, tag: str) -> dict[str, Any]:
    """`concurrency` closed-loop streaming clients until `total` requests are done."""
    samples: list[Sample] = []
    counter = iter(range(total))

    async def worker() -> None:
        for index in counter:
            samples.append(await client.send(queries[index % len(queries)], stream=True, conversation=f"{tag}-{index}"))

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    return {"samples": samples, "seconds": elapsed}


def load_report(result: dict[str, Any], expected: bytes) -> dict[str, Any]:
    samples: list[Sample] = result["samples"]
    errors = [s for s in samples if not s.ok]
    corrupted = [s for s in samples if s.ok and s.body != expected]
    ok = [s for s in samples if s.ok]
    return {
        "requests": len(samples),
        "seconds": round(result["seconds"], 2),
        "requests_per_s": round(len(samples) / result["seconds"], 1),
        "errors": len(errors) + len(corrupted),
        "error_examples": sorted({s.error for s in errors})[:3] + (["body differs from upstream"] if corrupted else []),
        "degraded": sum(1 for s in samples if s.degraded),
        "ttfb_ms": benchutil.summary_ms([s.ttfb_ms for s in ok]),
        "stream_ms": benchutil.summary_ms([s.total_ms for s in ok]),
    }


async def client_main(
    direct_url: str, tap_url: str, args: argparse.Namespace, expected_stream: bytes
) -> dict[str, Any]:
    queries = corpus.queries(max(args.pairs, args.stream_pairs, 64), seed=5)
    timeout = aiohttp.ClientTimeout(total=120)
    async with (
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), timeout=timeout) as s1,
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), timeout=timeout) as s2,
    ):
        direct, tap = Client(s1, direct_url), Client(s2, tap_url)
        await ab_pairs(direct, tap, queries[:10], stream=False, tag="warm")  # connections, caches
        await ab_pairs(direct, tap, queries[:4], stream=True, tag="warm-s")

        d, t = await ab_pairs(direct, tap, queries[: args.pairs], stream=False, tag="plain")
        bad = [s for s in (*d, *t) if not s.ok]
        recall_ms = [s.recall_ms for s in t if s.recall_ms is not None]
        non_streaming = {
            "pairs": len(d),
            "errors": len(bad),
            "degraded": sum(1 for s in t if s.degraded),
            "recalled_mean": round(sum(s.recalled for s in t) / max(1, len(t)), 1),
            "latency": added([s.total_ms for s in d if s.ok], [s.total_ms for s in t if s.ok]),
            "tap_recall_ms": benchutil.summary_ms(recall_ms),
            "added_minus_recall_p50_ms": round(
                benchutil.percentile([s.total_ms for s in t if s.ok], 50)
                - benchutil.percentile([s.total_ms for s in d if s.ok], 50)
                - benchutil.percentile(recall_ms, 50),
                2,
            ),
        }
        benchutil.note(f"non-streaming: {non_streaming['latency']}")

        d, t = await ab_pairs(direct, tap, queries[: args.stream_pairs], stream=True, tag="stream")
        recall_ms = [s.recall_ms for s in t if s.recall_ms is not None]
        ttfb = added([s.ttfb_ms for s in d if s.ok], [s.ttfb_ms for s in t if s.ok])
        streaming = {
            "pairs": len(d),
            "events_per_stream": len(stream_events(args.events)),
            "upstream_gap_ms": args.gap_ms,
            "errors": sum(1 for s in (*d, *t) if not s.ok)
            + sum(1 for s in (*d, *t) if s.ok and s.body != expected_stream),
            "degraded": sum(1 for s in t if s.degraded),
            "ttfb": ttfb,
            "tap_recall_ms": benchutil.summary_ms(recall_ms),
            "ttfb_added_minus_recall_p50_ms": round(ttfb["added_p50_ms"] - benchutil.percentile(recall_ms, 50), 2),
            "gaps": gaps(d, t),
            "stream_total": added([s.total_ms for s in d if s.ok], [s.total_ms for s in t if s.ok]),
        }
        benchutil.note(f"streaming: ttfb {ttfb}")

        throughput: dict[str, Any] = {}
        for level in args.concurrency:
            total = max(args.min_load_requests, level * args.load_rounds)
            order = ("direct", "tap") if level % 2 else ("tap", "direct")
            runs: dict[str, dict[str, Any]] = {}
            for name in order:
                client = direct if name == "direct" else tap
                runs[name] = load_report(
                    await load(client, queries, level, total, f"load{level}-{name}"), expected_stream
                )
            throughput[str(level)] = {
                **runs,
                "ratio_requests_per_s": round(runs["tap"]["requests_per_s"] / runs["direct"]["requests_per_s"], 3),
                "ttfb_added_p50_ms": round(runs["tap"]["ttfb_ms"]["p50"] - runs["direct"]["ttfb_ms"]["p50"], 2),
            }
            benchutil.note(
                f"{level} clients: direct {runs['direct']['requests_per_s']} req/s, "
                f"tap {runs['tap']['requests_per_s']} req/s, "
                f"errors {runs['tap']['errors']}, degraded {runs['tap']['degraded']}"
            )
    return {"non_streaming": non_streaming, "streaming": streaming, "throughput": throughput}


def build_store(home: Path, memories: int) -> dict[str, Any]:
    """A data dir with `memories` memories in the bench scope (then closed, for tap serve)."""
    rt = open_runtime(LoadedConfig(config=parse_config(""), path=None, data_dir=home))
    try:
        pool = corpus.Corpus(rt.embedder, pool=min(1500, max(100, memories // 10)))
        seconds = corpus.fill(rt.store, pool, memories, scope=SCOPE)
        return {"memories": memories, "build_s": round(seconds + pool.embed_s, 1)}
    finally:
        rt.close()


def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="tap-bench-proxy-") as tmp:
        home = Path(tmp) / "home"
        upstream = Upstream(Path(tmp), args.events, args.gap_ms)  # starts while the store is built
        try:
            store = build_store(home, args.memories)
            config = Path(tmp) / "tap.toml"
            config.write_text(f'[upstream]\nanthropic = "{upstream.url}"\n' + args.tap_config)
            tap = ServeProcess(home, config=config)
            try:
                tap.start(timeout=120)
                expected = b"".join(stream_events(args.events))
                measured = asyncio.run(client_main(upstream.url, tap.url, args, expected))
                assert tap.proc is not None
                rss = benchutil.rss_mb(tap.proc.pid)
            finally:
                tap.stop()
        finally:
            upstream.stop()
    ns, st = measured["non_streaming"], measured["streaming"]
    verdict = {
        "added_p50_ms": ns["latency"]["added_p50_ms"],
        "added_p99_ms": ns["latency"]["added_p99_ms"],
        "ttfb_added_minus_recall_p50_ms": st["ttfb_added_minus_recall_p50_ms"],
        "gap_abs_difference_p99_ms": st["gaps"]["abs_gap_difference_ms"].get("p99"),
        "gap_noise_floor_p99_ms": st["gaps"]["noise_floor_direct_vs_direct"]["abs_gap_difference_ms"].get("p99"),
        "errors_at_max_concurrency": measured["throughput"][str(max(args.concurrency))]["tap"]["errors"],
    }
    verdict["meets"] = {
        "added_p50": verdict["added_p50_ms"] <= TARGETS["added_p50_ms"],
        "added_p99": verdict["added_p99_ms"] <= TARGETS["added_p99_ms"],
        "ttfb": verdict["ttfb_added_minus_recall_p50_ms"] <= TARGETS["ttfb_added_minus_recall_ms"],
        "gaps": (verdict["gap_abs_difference_p99_ms"] or 0) - (verdict["gap_noise_floor_p99_ms"] or 0)
        <= TARGETS["gap_ms"],
        "no_errors": verdict["errors_at_max_concurrency"] == 0,
    }
    return {
        "benchmark": "proxy",
        "machine": benchutil.machine(),
        "method": {
            "processes": "fake Anthropic upstream (own process), real `tap serve` subprocess, load generator "
            "(this process, aiohttp): three processes on the same 2 cores, so each side's CPU use shows up in "
            "the other's numbers as it would on a user's machine",
            "pairs": "every latency sample is an A/B pair (same request direct and through tap, back to back, "
            "order alternating); added = percentile(tap) - percentile(direct) in the same run",
            "request": "Anthropic /v1/messages: system prompt, 4 history turns, a new user message (~3 KB); "
            "unique x-tap-conversation per request so recall does the full work every time",
            "stream": f"{len(stream_events(args.events))} SSE events, one per write, {args.gap_ms} ms apart",
            "store": f"{args.memories} memories in the requests' scope (bench/corpus.py)",
            "tap_config": "defaults" + (f" plus {args.tap_config!r}" if args.tap_config else ""),
        },
        "targets": TARGETS,
        "store": store,
        **measured,
        "tap_rss_after_mb": round(rss, 1),
        "verdict": verdict,
        "litellm": {
            "published_added_ms": LITELLM_MS,
            "source": LITELLM_SOURCE,
            "note": "LiteLLM's figure is plain forwarding without memory; tap's added latency includes a "
            "hybrid recall over the scope's memories. tap's forwarding cost alone is roughly added − recall "
            "(added_minus_recall_p50_ms).",
        },
    }


def print_report(result: dict[str, Any]) -> None:
    ns, st = result["non_streaming"], result["streaming"]
    lat, ttfb, gp = ns["latency"], st["ttfb"], st["gaps"]
    rows: list[list[object]] = [
        ["non-streaming p50", lat["direct_p50_ms"], lat["tap_p50_ms"], lat["added_p50_ms"], lat["ratio_p50"]],
        ["non-streaming p99", lat["direct_p99_ms"], lat["tap_p99_ms"], lat["added_p99_ms"], lat["ratio_p99"]],
        ["streaming TTFB p50", ttfb["direct_p50_ms"], ttfb["tap_p50_ms"], ttfb["added_p50_ms"], ttfb["ratio_p50"]],
        ["streaming TTFB p99", ttfb["direct_p99_ms"], ttfb["tap_p99_ms"], ttfb["added_p99_ms"], ttfb["ratio_p99"]],
    ]
    print(f"proxy overhead with {result['store']['memories']} memories (ms; A/B pairs in one run)")
    print(benchutil.table(["measure", "direct", "tap", "added", "ratio"], rows))
    print(
        f"recall inside tap p50 {ns['tap_recall_ms'].get('p50')} ms; TTFB added − recall p50 "
        f"{st['ttfb_added_minus_recall_p50_ms']} ms; |gap difference| p50/p99/max "
        f"{gp['abs_gap_difference_ms'].get('p50')}/{gp['abs_gap_difference_ms'].get('p99')}/"
        f"{gp['abs_gap_difference_ms'].get('max')} ms ({100 * gp['share_within_2ms']:.1f}% within 2 ms)"
    )
    floor = gp["noise_floor_direct_vs_direct"]
    print(
        f"noise floor (direct vs direct): |gap difference| p50/p99/max {floor['abs_gap_difference_ms'].get('p50')}/"
        f"{floor['abs_gap_difference_ms'].get('p99')}/{floor['abs_gap_difference_ms'].get('max')} ms "
        f"({100 * floor['share_within_2ms']:.1f}% within 2 ms)"
    )
    rows = []
    for level, entry in result["throughput"].items():
        rows.append(
            [
                level,
                entry["direct"]["requests_per_s"],
                entry["tap"]["requests_per_s"],
                entry["ratio_requests_per_s"],
                entry["tap"]["errors"],
                entry["tap"]["degraded"],
                entry["ttfb_added_p50_ms"],
            ]
        )
    print(benchutil.table(["clients", "direct req/s", "tap req/s", "ratio", "errors", "degraded", "TTFB +p50"], rows))
    print(
        f"LiteLLM publishes ~{LITELLM_MS} ms added without memory; "
        f"tap forwarding alone ≈ {ns['added_minus_recall_p50_ms']} ms"
    )
    print(f"verdict: {result['verdict']}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--pairs", type=int, default=300, help="non-streaming A/B pairs")
    parser.add_argument("--stream-pairs", type=int, default=100, help="streaming A/B pairs")
    parser.add_argument("--events", type=int, default=40, help="text deltas per stream")
    parser.add_argument("--gap-ms", type=float, default=15.0, help="upstream delay between SSE events")
    parser.add_argument("--concurrency", default="1,16,64")
    parser.add_argument("--load-rounds", type=int, default=4, help="requests per client in the load runs")
    parser.add_argument("--min-load-requests", type=int, default=20)
    parser.add_argument("--tap-config", default="", help="extra TOML appended to tap serve's config")
    parser.add_argument(
        "--no-background-extraction",
        action="store_true",
        help="diagnostic: tap serve never closes idle windows during the run, so no extraction competes with "
        "the streams (results to bench/results/proxy-no-extraction.json)",
    )
    parser.add_argument("--quick", action="store_true", help="200 memories, a few requests (smoke run)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    args.concurrency = [int(c) for c in str(args.concurrency).split(",") if c.strip()]
    if args.quick:
        args.memories, args.pairs, args.stream_pairs, args.events, args.gap_ms = 200, 6, 4, 5, 2.0
        args.concurrency, args.load_rounds, args.min_load_requests = [1, 4], 2, 2
    name = "proxy"
    if args.no_background_extraction:
        args.tap_config += "\n[extract]\nflush_after_s = 1000000000\n"
        name = "proxy-no-extraction"
    result = run(args)
    result["mode"] = "quick" if args.quick else "full"
    path = benchutil.write_result(name, result, args.out)
    print_report(result)
    print(f"\nwritten to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
