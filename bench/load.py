"""The hot path under load: concurrent streams through `tap serve`, with memories or without.

Run: ``./dev bench load [--memories 10000] [--levels 1,8,32,64,128] [--rounds 6] [--quick]``.
Writes ``bench/results/load.json`` and prints a table; ``--timeline DIR`` also writes every request
(when sent, TTFB, recall time) of every side to ``DIR/<side>.jsonl``.

Method (three processes on the same cores, as in bench/proxy.py, whose fake upstream, client and
store builder this reuses):
- the upstream: bench/fake_upstream.py in its own process (Anthropic Messages API, realistic SSE,
  ``--events`` text deltas ``--gap-ms`` apart);
- tap: a real ``tap serve`` subprocess on a data dir with ``--memories`` memories in the requests'
  scope (bench/corpus.py), default config (150 ms recall deadline, capture and extraction on);
- the load generator: this process. At each level, L closed-loop clients send streaming requests
  (each client starts at a random moment within the first ``--ramp-s``, as load tools ramp up,
  then sends its next request as soon as the previous stream ends), first straight to the
  upstream, then through tap (the order alternates by level), ``--rounds`` requests per client.
  Every request is a different question (and its own conversation), so neither tap's block reuse
  nor its recall cache can answer it: each one costs a full recall.
- bursts: ``--bursts`` levels are also sent as ``--waves`` waves of L requests at once (the next
  wave when the last one is done), the worst case for admission: everything arrives together.

Reported per level: the share of requests that carried memories (``x-tap-recalled`` > 0), how many
of those came from BM25 alone (``x-tap-recall-mode: lexical-only``, admission's fallback), degraded
requests by reason (``x-tap-degraded``), time to first byte p50 / p99 through tap and direct, and
the added TTFB (tap − direct at the same level, same run), inter-chunk gap p99 (tap and direct),
errors (transport errors, non-200, a body that differs from the upstream's bytes), requests/s, and
the tap server's CPU time per request (all its threads and its recall process, user + system) and cores used meanwhile,
and its event loop's lag (``/tap/status`` ``event_loop_lag``, read at the end of the side: the
last minute, so it includes some of what ran before).
The targets (issue #16): at 64 streams ≥ 95 % with memories and added TTFB p99 ≤ 3x the
single-stream figure; at 128, ≥ 80 %.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import random
import shutil
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import benchutil
import corpus
import tapserve
from fake_upstream import stream_events

TARGETS = {"share_with_memories_at_64": 0.95, "share_with_memories_at_128": 0.80, "added_ttfb_p99_ratio_at_64": 3.0}


bp = benchutil.bench_proxy()


@dataclass
class Sample:
    """One streamed request as the client saw it."""

    ok: bool
    error: str = ""
    ttfb_ms: float = 0.0
    total_ms: float = 0.0
    events_ms: list[float] = field(default_factory=list)
    recalled: int = 0
    recall_ms: float | None = None
    degraded: str = ""
    lexical_only: bool = False
    body: bytes = b""
    sent_at: float = 0.0
    """time.perf_counter() when the request was sent."""


class Client:
    """Sends one streaming Anthropic request (bench/proxy.py's shape) to a base URL and times it."""

    def __init__(self, session: aiohttp.ClientSession, base: str) -> None:
        self.session = session
        self.base = base

    async def send(self, query: str, conversation: str) -> Sample:
        headers = {
            "content-type": "application/json",
            "x-api-key": "sk-bench-not-a-key",
            "anthropic-version": "2023-06-01",
            "x-tap-scope": bp.SCOPE,
            "x-tap-conversation": conversation,
        }
        started = time.perf_counter()
        try:
            async with self.session.post(
                self.base + "/v1/messages", data=bp.request_body(query, True), headers=headers
            ) as response:
                sample = await self._read(response, started)
        except (aiohttp.ClientError, TimeoutError) as exc:
            sample = Sample(ok=False, error=f"{type(exc).__name__}: {exc}", total_ms=_ms_since(started))
        sample.sent_at = started
        return sample

    @staticmethod
    async def _read(response: aiohttp.ClientResponse, started: float) -> Sample:
        sample = Sample(ok=response.status == 200, error="" if response.status == 200 else f"HTTP {response.status}")
        sample.degraded = response.headers.get("x-tap-degraded", "")
        sample.recalled = int(response.headers.get("x-tap-recalled", "0") or 0)
        sample.lexical_only = response.headers.get("x-tap-recall-mode", "") == "lexical-only"
        if "x-tap-recall-ms" in response.headers:
            sample.recall_ms = float(response.headers["x-tap-recall-ms"])
        chunks: list[bytes] = []
        tail = b""
        async for chunk in response.content.iter_any():
            now = _ms_since(started)
            if not chunks:
                sample.ttfb_ms = now
            chunks.append(chunk)
            tail += chunk
            events = tail.count(b"\n\n")
            if events:  # an SSE event ends with a blank line: it arrived with this chunk
                sample.events_ms += [now] * events
                tail = tail[tail.rfind(b"\n\n") + 2 :]
        sample.total_ms = _ms_since(started)
        sample.body = b"".join(chunks)
        return sample


def _ms_since(started: float) -> float:
    return (time.perf_counter() - started) * 1000


class Questions:
    """Distinct user questions (bench/corpus.py), handed out once each."""

    def __init__(self, count: int, seed: int = 11) -> None:
        seen: dict[str, None] = {}
        batch = 0
        while len(seen) < count:
            for query in corpus.queries(count, seed=seed + batch):
                seen.setdefault(query, None)
            batch += 1
        self._items = list(seen)[:count]
        self._next = 0

    def take(self) -> str:
        query = self._items[self._next % len(self._items)]
        self._next += 1
        return query


async def closed_loop(
    client: Client, questions: Questions, level: int, rounds: int, ramp_s: float, tag: str
) -> tuple[list[Sample], float]:
    """`level` clients, each starting at a random moment within `ramp_s`, then `rounds` streams
    back to back."""
    rng = random.Random(level)
    samples: list[Sample] = []

    async def one(worker: int, delay: float) -> None:
        await asyncio.sleep(delay)
        for index in range(rounds):
            samples.append(await client.send(questions.take(), f"{tag}-{worker}-{index}"))

    started = time.perf_counter()
    await asyncio.gather(*(one(w, rng.uniform(0, ramp_s) if level > 1 else 0.0) for w in range(level)))
    return samples, time.perf_counter() - started


async def waves(client: Client, questions: Questions, level: int, count: int, tag: str) -> tuple[list[Sample], float]:
    """`count` waves of `level` simultaneous streams, each wave once the last one has finished."""
    samples: list[Sample] = []
    started = time.perf_counter()
    for wave in range(count):
        sent = [client.send(questions.take(), f"{tag}-{wave}-{i}") for i in range(level)]
        samples += await asyncio.gather(*sent)
    return samples, time.perf_counter() - started


def gaps(samples: Sequence[Sample]) -> list[float]:
    """Every gap between consecutive SSE events of the given streams, in ms."""
    return [s.events_ms[j] - s.events_ms[j - 1] for s in samples for j in range(1, len(s.events_ms))]


def side_report(samples: Sequence[Sample], seconds: float, expected: bytes) -> dict[str, Any]:
    """One side (direct or through tap) of one level."""
    good = [s for s in samples if s.ok and s.body == expected]
    failed = [s for s in samples if not s.ok]
    corrupted = [s for s in samples if s.ok and s.body != expected]
    with_memories = sum(1 for s in good if s.recalled > 0)
    return {
        "requests": len(samples),
        "seconds": round(seconds, 2),
        "requests_per_s": round(len(samples) / seconds, 1) if seconds else 0.0,
        "errors": len(failed) + len(corrupted),
        "error_examples": sorted({s.error for s in failed})[:3] + (["body differs from upstream"] if corrupted else []),
        "with_memories": with_memories,
        "share_with_memories": round(with_memories / len(samples), 4) if samples else 0.0,
        "lexical_only_with_memories": sum(1 for s in good if s.recalled > 0 and s.lexical_only),
        "degraded": dict(Counter(s.degraded for s in samples if s.degraded)),
        "ttfb_ms": benchutil.summary_ms([s.ttfb_ms for s in good]),
        "recall_ms": benchutil.summary_ms([s.recall_ms for s in good if s.recall_ms is not None]),
        "inter_chunk_gap_ms": benchutil.summary_ms(gaps(good)),
    }


def level_report(sides: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Every side of a level, and the time to first byte each tap added over direct (same level,
    same run): `added_ttfb_p50_ms` for tap, `baseline.added_ttfb_p50_ms` for the baseline."""
    out: dict[str, Any] = dict(sides)
    direct = sides["direct"]
    for name in ("tap", "baseline"):
        if name not in sides:
            continue
        into = out if name == "tap" else out[name]
        for pct in ("p50", "p99"):
            if sides[name]["ttfb_ms"].get("n") and direct["ttfb_ms"].get("n"):
                into[f"added_ttfb_{pct}_ms"] = round(sides[name]["ttfb_ms"][pct] - direct["ttfb_ms"][pct], 2)
    return out


def tap_status(url: str, token: str) -> dict[str, Any]:
    """tap's own counters (GET /tap/status)."""
    request = urllib.request.Request(url + "/tap/status", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        status: dict[str, Any] = json.loads(response.read())
    return status


def with_cpu(side: dict[str, Any], pid: int | None, cpu_before: float) -> dict[str, Any]:
    """The side's report plus what its tap server spent on it: CPU ms per request (every thread,
    user + system) and cores used on average while the side ran."""
    if pid is not None and side["requests"]:
        spent = benchutil.cpu_seconds(pid, tree=True) - cpu_before
        side["server_cpu_ms_per_request"] = round(1000 * spent / side["requests"], 2)
        side["server_cpu_cores"] = round(spent / side["seconds"], 2) if side["seconds"] else None
    return side


async def measure(
    urls: dict[str, str],
    pids: dict[str, int],
    args: argparse.Namespace,
    expected: bytes,
    statuses: dict[str, Callable[[], dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    """Every level (closed loop), then every burst level: direct, through tap, and through the
    baseline tap when there is one, the order rotating from level to level. `pids`: each tap
    server's process, whose CPU time each side reports; `statuses`: each tap server's
    /tap/status, read at the end of each of its sides for its event loop's lag (the last minute)."""
    statuses = statuses or {}
    questions = Questions((sum(args.levels) + 8) * args.rounds * len(urls) + sum(args.bursts) * args.waves * 3 + 64)
    timeout = aiohttp.ClientTimeout(total=300)
    out: dict[str, Any] = {"levels": {}, "bursts": {}}
    sessions = [aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), timeout=timeout) for _ in urls]
    try:
        clients = {name: Client(session, url) for (name, url), session in zip(urls.items(), sessions, strict=True)}
        for name, client in clients.items():  # connections, caches, the first recalls
            await closed_loop(client, questions, 4, 2, 0.2, f"warm-{name}")
        names = list(clients)
        for turn, level in enumerate(args.levels):
            sides: dict[str, dict[str, Any]] = {}
            for name in names[turn % len(names) :] + names[: turn % len(names)]:
                cpu = benchutil.cpu_seconds(pids[name], tree=True) if name in pids else 0.0
                samples, seconds = await closed_loop(
                    clients[name], questions, level, args.rounds, args.ramp_s, f"l{level}-{name}"
                )
                sides[name] = with_cpu(side_report(samples, seconds, expected), pids.get(name), cpu)
                await _with_lag(sides[name], statuses.get(name))
                write_timeline(args.timeline, f"closed-{level}-{name}", samples)
            out["levels"][str(level)] = level_report(sides)
            _progress(f"{level} streams", out["levels"][str(level)])
        for level in args.bursts:
            sides = {}
            for name in names:
                cpu = benchutil.cpu_seconds(pids[name], tree=True) if name in pids else 0.0
                samples, seconds = await waves(clients[name], questions, level, args.waves, f"b{level}-{name}")
                sides[name] = with_cpu(side_report(samples, seconds, expected), pids.get(name), cpu)
                await _with_lag(sides[name], statuses.get(name))
                write_timeline(args.timeline, f"burst-{level}-{name}", samples)
            out["bursts"][str(level)] = level_report(sides)
            _progress(f"{level} at once x{args.waves}", out["bursts"][str(level)])
    finally:
        for session in sessions:
            await session.close()
    return out


def write_timeline(folder: Path | None, name: str, samples: Sequence[Sample]) -> None:
    """With --timeline: every request of one side as a JSON line, in the order sent (ms from the
    side's first request): when it was sent, its TTFB, recall time, memories and degradation. This
    is where to look for what a p99 is made of (a few slow requests together, or spread out)."""
    if folder is None or not samples:
        return
    folder.mkdir(parents=True, exist_ok=True)
    first = min(s.sent_at for s in samples)
    with (folder / f"{name}.jsonl").open("w", encoding="utf-8") as out:
        for s in sorted(samples, key=lambda s: s.sent_at):
            row = {
                "sent_ms": round((s.sent_at - first) * 1000, 2),
                "ttfb_ms": round(s.ttfb_ms, 2),
                "recall_ms": s.recall_ms,
                "recalled": s.recalled,
                "lexical_only": s.lexical_only,
                "degraded": s.degraded,
                "error": s.error,
            }
            out.write(json.dumps(row) + "\n")


async def _with_lag(side: dict[str, Any], status: Callable[[], dict[str, Any]] | None) -> None:
    """Add the server's event loop lag (tap.runtime.loop_lag; absent from a baseline too old to have it)."""
    if status is not None:
        lag = (await asyncio.to_thread(status)).get("event_loop_lag")
        if lag:
            side["event_loop_lag_ms"] = lag


def _progress(label: str, entry: dict[str, Any]) -> None:
    direct = entry["direct"]
    for name in ("tap", "baseline"):
        if name in entry:
            side = entry[name]
            benchutil.note(
                f"{label} {name}: with memories {100 * side['share_with_memories']:.1f}%, TTFB p50/p99 "
                f"{side['ttfb_ms'].get('p50')}/{side['ttfb_ms'].get('p99')} ms, direct {direct['ttfb_ms'].get('p50')}/"
                f"{direct['ttfb_ms'].get('p99')} ms, errors {side['errors']}, degraded {side['degraded']}"
            )


def verdict(levels: dict[str, Any]) -> dict[str, Any]:
    """The issue's targets against this run."""
    out: dict[str, Any] = {}
    single = levels.get("1", {}).get("added_ttfb_p99_ms")
    for level, key in (("64", "share_with_memories_at_64"), ("128", "share_with_memories_at_128")):
        if level in levels:
            share = levels[level]["tap"]["share_with_memories"]
            out[key] = {"value": share, "meets": share >= TARGETS[key]}
    if single and "64" in levels and "added_ttfb_p99_ms" in levels["64"]:
        ratio = levels["64"]["added_ttfb_p99_ms"] / single
        out["added_ttfb_p99_ratio_at_64"] = {
            "value": round(ratio, 2),
            "single_stream_added_p99_ms": single,
            "meets": ratio <= TARGETS["added_ttfb_p99_ratio_at_64"],
        }
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    load_before = os.getloadavg()
    servers: dict[str, tapserve.Server] = {}
    with tempfile.TemporaryDirectory(prefix="tap-bench-load-") as tmp:
        upstream = bp.Upstream(Path(tmp), args.events, args.gap_ms)
        try:
            store = bp.build_store(Path(tmp) / "tap", args.memories)
            config = f'[upstream]\nanthropic = "{upstream.url}"\n' + args.tap_config
            trees = {"tap": benchutil.ROOT}
            if args.baseline_tree:
                shutil.copytree(Path(tmp) / "tap", Path(tmp) / "baseline")  # the same store, its own copy
                trees["baseline"] = args.baseline_tree.resolve()
            for name, tree in trees.items():
                servers[name] = tapserve.Server(Path(tmp) / name, config, code=tree).start()
            expected = b"".join(stream_events(args.events))
            urls = {"direct": upstream.url, **{name: server.url for name, server in servers.items()}}
            pids = {name: server.pid for name, server in servers.items()}
            statuses = {
                name: functools.partial(tap_status, server.url, server.token) for name, server in servers.items()
            }
            measured = asyncio.run(measure(urls, pids, args, expected, statuses))
            status = tap_status(servers["tap"].url, servers["tap"].token)
            rss = benchutil.rss_mb(servers["tap"].pid, tree=True)
        finally:
            for server in servers.values():
                server.stop()
            upstream.stop()
    return {
        "benchmark": "load",
        "machine": benchutil.machine(),
        "load_average": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in os.getloadavg()]},
        "method": {
            "processes": "fake Anthropic upstream (own process), real `tap serve` subprocess, load generator (this "
            "process, aiohttp), all on the same cores",
            "closed_loop": f"L clients, each starting within {args.ramp_s} s, then {args.rounds} streams back to back; "
            "direct and through tap at each level (order rotating)"
            + (
                f"; and through a baseline tap serve run from {args.baseline_tree} on a copy of the same store"
                if args.baseline_tree
                else ""
            ),
            "bursts": f"{args.waves} waves of L simultaneous streams",
            "requests": "Anthropic /v1/messages, stream: true, system prompt + 4 history turns + a new question "
            "(~3 KB); every question distinct, every request its own conversation",
            "stream": f"{len(stream_events(args.events))} SSE events, {args.gap_ms} ms apart",
            "store": f"{args.memories} memories in the requests' scope (bench/corpus.py)",
            "tap_config": "defaults" + (f" plus {args.tap_config!r}" if args.tap_config else ""),
        },
        "targets": TARGETS,
        "store": store,
        **measured,
        "tap_status": {
            key: status.get(key)
            for key in ("recall_ms", "intercept", "recall", "recall_process", "degraded")
            if key in status
        },
        "tap_rss_after_mb": round(rss, 1),
        "verdict": verdict(measured["levels"]),
    }


def print_report(result: dict[str, Any]) -> None:
    headers = ["streams", "server", "with memories", "BM25 only", "degraded", "TTFB p50", "p99", "direct p50", "p99"]
    headers += ["added p50", "added p99", "gap p99", "direct", "errors", "req/s", "CPU ms/req", "cores", "loop lag p50"]
    for title, entries in (("closed loop", result["levels"]), ("bursts", result["bursts"])):
        rows = []
        for level, entry in entries.items():
            direct = entry["direct"]
            for name in ("tap", "baseline"):
                if name not in entry:
                    continue
                side = entry[name]
                added = entry if name == "tap" else side
                rows.append(
                    [
                        level,
                        name,
                        f"{100 * side['share_with_memories']:.1f}%",
                        side.get("lexical_only_with_memories", 0),
                        sum(side["degraded"].values()),
                        side["ttfb_ms"].get("p50"),
                        side["ttfb_ms"].get("p99"),
                        direct["ttfb_ms"].get("p50"),
                        direct["ttfb_ms"].get("p99"),
                        added.get("added_ttfb_p50_ms"),
                        added.get("added_ttfb_p99_ms"),
                        side["inter_chunk_gap_ms"].get("p99"),
                        direct["inter_chunk_gap_ms"].get("p99"),
                        side["errors"],
                        side["requests_per_s"],
                        side.get("server_cpu_ms_per_request"),
                        side.get("server_cpu_cores"),
                        side.get("event_loop_lag_ms", {}).get("p50_ms"),
                    ]
                )
        if rows:
            print(f"{title} ({result['store']['memories']} memories; ms)")
            print(benchutil.table(headers, rows))
    print(f"verdict: {json.dumps(result['verdict'])}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--levels", default="1,8,32,64,128", help="concurrent streams (closed loop)")
    parser.add_argument("--rounds", type=int, default=6, help="requests per client at each level")
    parser.add_argument("--ramp-s", type=float, default=1.0, help="clients start within this many seconds")
    parser.add_argument("--bursts", default="64,128", help="levels also sent as waves of simultaneous streams")
    parser.add_argument("--waves", type=int, default=3)
    parser.add_argument("--events", type=int, default=40, help="text deltas per stream")
    parser.add_argument("--gap-ms", type=float, default=15.0, help="upstream delay between SSE events")
    parser.add_argument("--tap-config", default="", help="extra TOML appended to tap serve's config")
    parser.add_argument(
        "--baseline-tree",
        type=Path,
        default=None,
        help="also measure a tap serve run from this source tree (e.g. `git archive` of an older commit), "
        "on a copy of the same store, in the same run",
    )
    parser.add_argument("--quick", action="store_true", help="200 memories, levels 1 and 4 (smoke run)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--timeline", type=Path, default=None, help="also write every request of every side to DIR/<side>.jsonl"
    )
    args = parser.parse_args(argv)
    args.levels = [int(c) for c in str(args.levels).split(",") if c.strip()]
    args.bursts = [int(c) for c in str(args.bursts).split(",") if c.strip()]
    if args.quick:
        args.memories, args.levels, args.bursts, args.rounds, args.waves = 200, [1, 4], [4], 2, 1
        args.events, args.gap_ms = 5, 2.0
    result = run(args)
    result["mode"] = "quick" if args.quick else "full"
    path = benchutil.write_result("load", result, args.out)
    print_report(result)
    print(f"\nwritten to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
