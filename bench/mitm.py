"""mitmproxy way in: latency added by tap's addon against mitmproxy with no addon, in the same run.

Run: ``./dev bench mitm [--memories 10000] [--pairs 200] [--stream-pairs 60] [--quick]``. Writes
``bench/results/mitm.json`` and prints a table.

Method (four processes, so no side measures itself):
- the upstream: bench/fake_upstream.py (the Anthropic Messages API; streams one SSE event per write,
  ``--gap-ms`` apart), as in bench/proxy.py;
- the baseline: ``mitmdump`` (the same mitmproxy) in reverse mode to the upstream with no addon,
  ``stream_large_bodies=1`` so it streams every body as tap's addon does (mitmproxy's default
  buffers a whole response, which no one would use for SSE);
- tap: a real ``tap mitm --no-regular --reverse UPSTREAM@PORT`` on a data dir holding ``--memories``
  memories in the requests' scope (it opens the store itself: recall under the default 150 ms
  deadline, injection, the tee, capture and the extraction worker all on);
- the load generator: this process (aiohttp, plain HTTP to both reverse proxies, so the numbers
  are the addon's work and not TLS). Every latency sample is an A/B pair — the same request through
  the baseline and through tap, back to back, order alternating — and every timing is reported as
  baseline, tap, tap − baseline and the ratio tap / baseline of the same run.
Measured: non-streaming latency (p50, p99); streaming time to first byte and the inter-event gaps
(tap's gap minus the baseline's at the same event index; "held back" = how much later each event
arrives relative to the stream's first byte; the same measure on consecutive baseline streams is
the noise floor); 16 concurrent closed-loop streams through each (requests/s, errors: transport
errors, non-200, a body differing from the upstream's bytes).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import aiohttp
import benchutil
import corpus
from fake_upstream import stream_events

bp = benchutil.bench_proxy()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], name: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited early (code {proc.returncode})")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{name} did not listen on {port} in time")


class Process:
    """A subprocess with its output in a log file; stopped with SIGTERM."""

    def __init__(self, name: str, args: list[str], log: Path, env: dict[str, str], cwd: Path) -> None:
        self.name = name
        self.log = log
        with log.open("wb") as out:
            self.proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def ratio(tap: float, base: float) -> float:
    return round(tap / base, 3) if base else float("nan")


def compare(base: Sequence[float], tap: Sequence[float]) -> dict[str, float]:
    """p50/p99 of both, tap − baseline, and tap / baseline."""
    out: dict[str, float] = {}
    for pct in (50, 99):
        b, t = benchutil.percentile(base, pct), benchutil.percentile(tap, pct)
        out[f"baseline_p{pct}_ms"] = round(b, 2)
        out[f"tap_p{pct}_ms"] = round(t, 2)
        out[f"added_p{pct}_ms"] = round(t - b, 2)
        out[f"ratio_p{pct}"] = ratio(t, b)
    return out


async def measure(baseline_url: str, tap_url: str, args: argparse.Namespace, expected: bytes) -> dict[str, Any]:
    queries = corpus.queries(max(args.pairs, args.stream_pairs, 64), seed=7)
    timeout = aiohttp.ClientTimeout(total=120)
    async with (
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), timeout=timeout) as s1,
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), timeout=timeout) as s2,
    ):
        base, tap = bp.Client(s1, baseline_url), bp.Client(s2, tap_url)
        await bp.ab_pairs(base, tap, queries[:10], stream=False, tag="warm")
        await bp.ab_pairs(base, tap, queries[:4], stream=True, tag="warm-s")

        b, t = await bp.ab_pairs(base, tap, queries[: args.pairs], stream=False, tag="plain")
        recall_ms = [s.recall_ms for s in t if s.recall_ms is not None]
        non_streaming = {
            "pairs": len(b),
            "errors": sum(1 for s in (*b, *t) if not s.ok),
            "degraded": sum(1 for s in t if s.degraded),
            "recalled_mean": round(sum(s.recalled for s in t) / max(1, len(t)), 1),
            "latency": compare([s.total_ms for s in b if s.ok], [s.total_ms for s in t if s.ok]),
            "tap_recall_ms": benchutil.summary_ms(recall_ms),
        }
        non_streaming["added_minus_recall_p50_ms"] = round(
            non_streaming["latency"]["added_p50_ms"] - benchutil.percentile(recall_ms, 50), 2
        )
        benchutil.note(f"non-streaming: {non_streaming['latency']}")

        b, t = await bp.ab_pairs(base, tap, queries[: args.stream_pairs], stream=True, tag="stream")
        recall_ms = [s.recall_ms for s in t if s.recall_ms is not None]
        ttfb = compare([s.ttfb_ms for s in b if s.ok], [s.ttfb_ms for s in t if s.ok])
        gap = bp.gaps(b, t)
        streaming = {
            "pairs": len(b),
            "events_per_stream": len(stream_events(args.events)),
            "upstream_gap_ms": args.gap_ms,
            "errors": sum(1 for s in (*b, *t) if not s.ok or s.body != expected),
            "degraded": sum(1 for s in t if s.degraded),
            "ttfb": ttfb,
            "tap_recall_ms": benchutil.summary_ms(recall_ms),
            "ttfb_added_minus_recall_p50_ms": round(ttfb["added_p50_ms"] - benchutil.percentile(recall_ms, 50), 2),
            "gaps": {
                "baseline_gap_ms": gap["direct_gap_ms"],
                "tap_gap_ms": gap["tap_gap_ms"],
                "ratio_gap_p50": ratio(gap["tap_gap_ms"].get("p50", 0), gap["direct_gap_ms"].get("p50", 0)),
                "ratio_gap_p99": ratio(gap["tap_gap_ms"].get("p99", 0), gap["direct_gap_ms"].get("p99", 0)),
                "abs_gap_difference_ms": gap["abs_gap_difference_ms"],
                "held_back_ms": gap["event_offset_from_first_byte_tap_minus_direct_ms"],
                "noise_floor_baseline_vs_baseline": gap["noise_floor_direct_vs_direct"],
            },
            "stream_total": compare([s.total_ms for s in b if s.ok], [s.total_ms for s in t if s.ok]),
        }
        benchutil.note(f"streaming: ttfb {ttfb}")

        concurrent: dict[str, Any] = {}
        total = max(args.concurrency * args.load_rounds, args.concurrency)
        for name in ("baseline", "tap"):
            client = base if name == "baseline" else tap
            concurrent[name] = bp.load_report(
                await bp.load(client, queries, args.concurrency, total, f"load-{name}"), expected
            )
        concurrent["ratio_requests_per_s"] = ratio(
            concurrent["tap"]["requests_per_s"], concurrent["baseline"]["requests_per_s"]
        )
        concurrent["ratio_ttfb_p50"] = ratio(
            concurrent["tap"]["ttfb_ms"]["p50"], concurrent["baseline"]["ttfb_ms"]["p50"]
        )
        concurrent["ratio_ttfb_p99"] = ratio(
            concurrent["tap"]["ttfb_ms"]["p99"], concurrent["baseline"]["ttfb_ms"]["p99"]
        )
        benchutil.note(
            f"{args.concurrency} streams: baseline {concurrent['baseline']['requests_per_s']} req/s, "
            f"tap {concurrent['tap']['requests_per_s']} req/s, errors {concurrent['tap']['errors']}"
        )
    return {"non_streaming": non_streaming, "streaming": streaming, "concurrent": concurrent}


def run(args: argparse.Namespace) -> dict[str, Any]:
    bin_dir = Path(sys.executable).parent
    with tempfile.TemporaryDirectory(prefix="tap-bench-mitm-") as tmp_name:
        tmp = Path(tmp_name)
        home = tmp / "home"
        upstream = bp.Upstream(tmp, args.events, args.gap_ms)
        started: list[Process] = []
        try:
            store = bp.build_store(home, args.memories)
            base_port, tap_port = free_port(), free_port()
            env = {**os.environ, "TAP_HOME": str(home), "TAP_CONFIG": str(tmp / "tap.toml")}
            (tmp / "tap.toml").write_text(args.tap_config)
            mitmdump = [
                str(bin_dir / "mitmdump"),
                "--mode",
                f"reverse:{upstream.url}@{base_port}",
                "--listen-host",
                "127.0.0.1",
                "--set",
                f"confdir={tmp / 'baseline-conf'}",
                "--set",
                "stream_large_bodies=1",
                "--quiet",
            ]
            started.append(Process("mitmdump", mitmdump, tmp / "mitmdump.log", env, tmp))
            tap_args = [sys.executable, "-m", "tap", "mitm", "--no-regular", "--reverse", f"{upstream.url}@{tap_port}"]
            started.append(Process("tap mitm", tap_args, tmp / "tap.log", env, tmp))
            for process, port in zip(started, (base_port, tap_port), strict=True):
                wait_for_port(port, process.proc, process.name)
            expected = b"".join(stream_events(args.events))
            measured = asyncio.run(
                measure(f"http://127.0.0.1:{base_port}", f"http://127.0.0.1:{tap_port}", args, expected)
            )
            rss = {p.name: round(benchutil.rss_mb(p.proc.pid), 1) for p in started}
            tap_log = (tmp / "tap.log").read_text(errors="replace")
        finally:
            for process in started:
                process.stop()
            upstream.stop()
    lat, st, conc = measured["non_streaming"]["latency"], measured["streaming"], measured["concurrent"]
    verdict = {
        "added_p50_ms": lat["added_p50_ms"],
        "added_p99_ms": lat["added_p99_ms"],
        "ratio_p50": lat["ratio_p50"],
        "ratio_p99": lat["ratio_p99"],
        "ttfb_ratio_p50": st["ttfb"]["ratio_p50"],
        "ttfb_added_minus_recall_p50_ms": st["ttfb_added_minus_recall_p50_ms"],
        "gap_ratio_p50": st["gaps"]["ratio_gap_p50"],
        "held_back_p99_ms": st["gaps"]["held_back_ms"].get("p99"),
        "held_back_noise_floor_p99_ms": st["gaps"]["noise_floor_baseline_vs_baseline"][
            "event_offset_difference_ms"
        ].get("p99"),
        "concurrent_ratio_requests_per_s": conc["ratio_requests_per_s"],
        "concurrent_errors": conc["tap"]["errors"] + conc["baseline"]["errors"],
    }
    return {
        "benchmark": "mitm",
        "machine": benchutil.machine(),
        "method": {
            "processes": "fake Anthropic upstream, mitmdump (no addon, streaming bodies), `tap mitm` (standalone, "
            "own store), load generator (this process, aiohttp): four processes on the same cores",
            "mode": "reverse proxies over plain HTTP (the addon's cost, not TLS's)",
            "pairs": "every latency sample is an A/B pair (same request through the baseline and through tap, back "
            "to back, order alternating); added = percentile(tap) - percentile(baseline), ratio = tap / baseline",
            "request": "Anthropic /v1/messages: system prompt, 4 history turns, a new user message (~3 KB); "
            "unique x-tap-conversation per request so recall does the full work every time",
            "stream": f"{len(stream_events(args.events))} SSE events, one per write, {args.gap_ms} ms apart",
            "store": f"{args.memories} memories in the requests' scope (bench/corpus.py)",
            "concurrency": f"{args.concurrency} closed-loop streaming clients, "
            f"{max(args.concurrency * args.load_rounds, args.concurrency)} requests per side",
        },
        "store": store,
        **measured,
        "rss_after_mb": rss,
        "tap_log_warnings": [line for line in tap_log.splitlines() if " WARNING " in line or " ERROR " in line][:10],
        "verdict": verdict,
    }


def print_report(result: dict[str, Any]) -> None:
    lat, st, conc = result["non_streaming"]["latency"], result["streaming"], result["concurrent"]
    ttfb, gaps = st["ttfb"], st["gaps"]
    rows: list[list[object]] = [
        ["non-streaming p50", lat["baseline_p50_ms"], lat["tap_p50_ms"], lat["added_p50_ms"], lat["ratio_p50"]],
        ["non-streaming p99", lat["baseline_p99_ms"], lat["tap_p99_ms"], lat["added_p99_ms"], lat["ratio_p99"]],
        ["stream TTFB p50", ttfb["baseline_p50_ms"], ttfb["tap_p50_ms"], ttfb["added_p50_ms"], ttfb["ratio_p50"]],
        ["stream TTFB p99", ttfb["baseline_p99_ms"], ttfb["tap_p99_ms"], ttfb["added_p99_ms"], ttfb["ratio_p99"]],
        [
            "inter-event gap p50",
            gaps["baseline_gap_ms"].get("p50"),
            gaps["tap_gap_ms"].get("p50"),
            "",
            gaps["ratio_gap_p50"],
        ],
        [
            "inter-event gap p99",
            gaps["baseline_gap_ms"].get("p99"),
            gaps["tap_gap_ms"].get("p99"),
            "",
            gaps["ratio_gap_p99"],
        ],
        [
            f"{result['method']['concurrency'].split()[0]} streams req/s",
            conc["baseline"]["requests_per_s"],
            conc["tap"]["requests_per_s"],
            "",
            conc["ratio_requests_per_s"],
        ],
        [
            f"{result['method']['concurrency'].split()[0]} streams TTFB p50",
            conc["baseline"]["ttfb_ms"]["p50"],
            conc["tap"]["ttfb_ms"]["p50"],
            "",
            conc["ratio_ttfb_p50"],
        ],
    ]
    print(benchutil.table(["measure (ms unless noted)", "mitmproxy", "tap addon", "added", "ratio"], rows))
    held = gaps["held_back_ms"]
    floor = gaps["noise_floor_baseline_vs_baseline"]["event_offset_difference_ms"]
    print(
        f"\nheld back (event offset from first byte, tap - baseline): p50 {held.get('p50')} ms, "
        f"p99 {held.get('p99')} ms"
        f" (noise floor baseline vs baseline p99 {floor.get('p99')} ms)"
    )
    print(
        f"recall p50 {st['tap_recall_ms'].get('p50')} ms; errors: non-streaming {result['non_streaming']['errors']}, "
        f"streaming {st['errors']}, concurrent {conc['tap']['errors'] + conc['baseline']['errors']}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--pairs", type=int, default=200, help="non-streaming A/B pairs")
    parser.add_argument("--stream-pairs", type=int, default=60, help="streaming A/B pairs")
    parser.add_argument("--events", type=int, default=40, help="text deltas per stream")
    parser.add_argument("--gap-ms", type=float, default=15.0, help="upstream delay between SSE events")
    parser.add_argument("--concurrency", type=int, default=16, help="concurrent streams")
    parser.add_argument("--load-rounds", type=int, default=4, help="requests per client in the concurrent run")
    parser.add_argument("--tap-config", default="", help="TOML for tap mitm's config")
    parser.add_argument("--quick", action="store_true", help="200 memories, a few requests (smoke run)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.quick:
        args.memories, args.pairs, args.stream_pairs, args.events, args.gap_ms = 200, 6, 4, 5, 2.0
        args.concurrency, args.load_rounds = 4, 1
    result = run(args)
    result["mode"] = "quick" if args.quick else "full"
    path = benchutil.write_result("mitm", result, args.out)
    print_report(result)
    print(f"\nwritten to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
