"""Benchmark: backfill of a Claude Code projects tree with `tap ingest`'s pipeline, end to end.

Run: ``./dev bench ingest [--lines 100000] [--keep DIR]``. Generates (seeded, in a temp dir) a
`projects/<project>/<session>.jsonl` tree of about `--lines` transcript lines: roughly half user
and assistant text lines (assistant messages split over several lines sharing one message id, as
Claude Code writes them) and half tool noise (tool_use, tool results with `toolUseResult`, thinking,
hook progress, system lines), across several projects and sessions, from varied chat-like text.

Then, in one process with a fresh data dir and the default config (rules extractor, embedded ONNX
embedder, embedded Chroma): parse → ingest (durable queue) → chunk → gate → extract → reconcile →
embed → store, i.e. exactly what `tap ingest PATH` does without a server. Reports turns/s end to
end (targets: ≥ 150 turns/s), the time in each phase, the embedder's and the store's shares of the
extraction time, and the peak RSS of the process (target ≤ 500 MB). Writes
``bench/results/ingest.json`` and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import benchutil

from bridges.logtail import OffsetStore, Tailer
from tap.config import LoadedConfig, parse_config
from tap.records import IngestEvent
from tap.wiring.runtime import Runtime, open_runtime

PEOPLE = ["Ana", "Priya", "Tomás", "Lea", "Kenji", "Olu", "Marta", "Sven", "Ines", "Ravi"]
PLACES = ["Lisbon", "Porto", "Berlin", "Osaka", "Lagos", "Oslo", "Sintra", "Braga", "Austin", "Lyon"]
THINGS = [
    "the billing service",
    "the invoice exporter",
    "the search index",
    "the mobile app",
    "the data pipeline",
    "the auth gateway",
    "the nightly backup job",
    "the pricing page",
    "the onboarding flow",
    "the CI runners",
]
TOOLS = ["Postgres", "Redis", "Kafka", "Alembic", "pytest", "Terraform", "Grafana", "DuckDB", "FastAPI", "Celery"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
MONTHS = ["March", "April", "May", "June", "July", "September", "October"]
USER_TEMPLATES = [
    "I'm moving {thing} to {tool} next {weekday}, can you check the migration scripts first?",
    "We decided to drop {tool} from {thing}; it caused too many incidents in {month}.",
    "My manager {person} wants {thing} finished by {month} {day}.",
    "I prefer small pull requests, please split the change to {thing} into {n} parts.",
    "Please never run the deploy script on {weekday} afternoons, {person} is on call then.",
    "Can you explain why {thing} is slow when {tool} has more than {n} thousand rows?",
    "I live in {place} now, so schedule the standup for 9am {place} time.",
    "Let's use {tool} for {thing} instead of writing our own.",
    "Thanks, that works.",
    "Run the tests again and tell me what fails.",
    "Remember that {person} owns {thing} and must review every change to it.",
    "I'm allergic to long meetings; keep the review with {person} under {n} minutes.",
    "We ship {thing} to {place} customers on {month} {day}, the contract says so.",
    "Why did the build fail?",
    "ok",
]
ASSISTANT_TEMPLATES = [
    "I'll start by reading the current configuration of {thing}.",
    "The migration of {thing} to {tool} needs {n} steps; I will do them one by one.",
    "Done: {thing} now uses {tool}, and the {n} tests pass.",
    "Here is the plan:\n1. Add the {tool} client.\n2. Move the queries of {thing}.\n3. Remove the old code.",
    "The slowdown comes from a missing index on the {tool} table used by {thing}.",
    "I will keep the change to {thing} under {n} files so {person} can review it quickly.",
    "Noted: {person} owns {thing}.",
    "The test failure is in the {tool} fixture; it expects {n} rows but gets none.",
    "I updated the README of {thing} with the {tool} setup steps.",
]
OUTPUTS = [
    "============================= test session starts ==============================\ncollected {n} items\n\n"
    "tests/test_{tool}.py ....F.....\n\nFAILED tests/test_{tool}.py::test_rows - AssertionError",
    "diff --git a/src/{tool}.py b/src/{tool}.py\n@@ -1,{n} +1,{n} @@\n-import old\n+import {tool}\n",
    "     1\t[tool.{tool}]\n     2\tenabled = true\n     3\tworkers = {n}\n" * 4,
    "{n} files changed, {n} insertions(+), 3 deletions(-)",
]


class Writer:
    """Builds transcript lines for one session, chained by uuid/parentUuid."""

    def __init__(self, rng: random.Random, session: str, cwd: str) -> None:
        self.rng = rng
        self.session = session
        self.cwd = cwd
        self.parent: str | None = None
        self.count = 0
        self.clock = 1_750_000_000.0

    def fill(self, template: str) -> str:
        r = self.rng
        return template.format(
            person=r.choice(PEOPLE),
            place=r.choice(PLACES),
            thing=r.choice(THINGS),
            tool=r.choice(TOOLS),
            weekday=r.choice(WEEKDAYS),
            month=r.choice(MONTHS),
            day=r.randint(1, 28),
            n=r.randint(2, 90),
        )

    def entry(self, kind: str, **fields: Any) -> str:
        self.count += 1
        self.clock += self.rng.uniform(1, 40)
        uuid = f"{self.session[:8]}-{self.count:06d}-4000-8000-{self.rng.getrandbits(48):012x}"
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(self.clock)) + ".000Z"
        line = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session,
            "version": "2.0.14",
            "gitBranch": "main",
            "type": kind,
            "uuid": uuid,
            "timestamp": stamp,
            **fields,
        }
        self.parent = uuid
        return json.dumps(line, separators=(",", ":"))

    def user(self, content: Any, **extra: Any) -> str:
        return self.entry("user", message={"role": "user", "content": content}, **extra)

    def assistant(self, msg_id: str, block: dict[str, Any]) -> str:
        usage = {"input_tokens": 4, "cache_read_input_tokens": 12000, "output_tokens": 80}
        message = {
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [block],
            "stop_reason": None,
            "usage": usage,
        }
        return self.entry("assistant", message=message, requestId="req_" + msg_id)

    def exchange(self) -> list[str]:
        """One user prompt and Claude's work on it: about half text lines, half tool noise."""
        r = self.rng
        lines = [self.user(" ".join(self.fill(r.choice(USER_TEMPLATES)) for _ in range(r.randint(1, 3))))]
        for step in range(r.randint(1, 3)):
            msg = f"msg_{self.session[:6]}{self.count:06d}{step}"
            if r.random() < 0.3:
                lines.append(
                    self.assistant(
                        msg,
                        {
                            "type": "thinking",
                            "thinking": self.fill(r.choice(USER_TEMPLATES)),
                            "signature": "EqQBCkYIBxgCKkB",
                        },
                    )
                )
            lines.append(self.assistant(msg, {"type": "text", "text": self.fill(r.choice(ASSISTANT_TEMPLATES))}))
            if r.random() < 0.5:
                lines.append(self.assistant(msg, {"type": "text", "text": self.fill(r.choice(ASSISTANT_TEMPLATES))}))
            tool_id = f"toolu_{self.count:08d}{step}"
            lines.append(
                self.assistant(
                    msg,
                    {
                        "type": "tool_use",
                        "id": tool_id,
                        "name": r.choice(["Bash", "Read"]),
                        "input": {"command": "pytest -q"},
                    },
                )
            )
            if r.random() < 0.5:
                lines.append(self.entry("progress", data={"type": "hook_progress"}, toolUseID=tool_id))
            output = self.fill(r.choice(OUTPUTS)) * r.randint(1, 6)
            result = [{"tool_use_id": tool_id, "type": "tool_result", "content": output}]
            lines.append(self.user(result, toolUseResult={"stdout": output, "stderr": ""}))
        msg = f"msg_{self.session[:6]}{self.count:06d}z"
        lines.append(self.assistant(msg, {"type": "text", "text": self.fill(r.choice(ASSISTANT_TEMPLATES))}))
        if r.random() < 0.2:
            lines.append(self.entry("system", subtype="stop_hook_summary", content="ok", level="info"))
        return lines


def generate(root: Path, total_lines: int, seed: int = 7) -> dict[str, int]:
    """A projects tree of about `total_lines` lines; returns counts of what was written."""
    rng = random.Random(seed)
    projects = [f"/home/{p.lower()}/src/{t.split()[-1]}" for p, t in zip(PEOPLE[:8], THINGS[:8], strict=True)]
    sessions = 0
    written = 0
    while written < total_lines:
        cwd = rng.choice(projects)
        session = f"{rng.getrandbits(32):08x}-1b6e-4c0a-8f21-{rng.getrandbits(48):012x}"
        folder = root / cwd.replace("/", "-")
        folder.mkdir(parents=True, exist_ok=True)
        writer = Writer(rng, session, cwd)
        target = min(rng.randint(800, 3200), total_lines - written)
        with (folder / f"{session}.jsonl").open("w", encoding="utf-8") as handle:
            count = 0
            while count < target:
                for line in writer.exchange():
                    handle.write(line + "\n")
                    count += 1
        written += count
        sessions += 1
    return {
        "lines": written,
        "projects": len(list(root.iterdir())),
        "sessions": sessions,
        "bytes": sum(p.stat().st_size for p in root.rglob("*.jsonl")),
    }


class Timed:
    """Wraps an object and adds up the wall time spent in the named methods."""

    def __init__(self, inner: Any, methods: Sequence[str]) -> None:
        self._inner = inner
        self.seconds = 0.0
        self.calls = 0
        self.by_method: dict[str, list[float]] = {name: [0.0, 0] for name in methods}
        for name in methods:
            setattr(self, name, self._wrap(name, getattr(inner, name)))

    def _wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent = time.perf_counter() - start
                self.seconds += spent
                self.calls += 1
                self.by_method[name][0] += spent
                self.by_method[name][1] += 1

        return timed

    def breakdown(self) -> dict[str, dict[str, float]]:
        """Seconds and calls per wrapped method."""
        return {name: {"seconds": round(s, 2), "calls": int(n)} for name, (s, n) in self.by_method.items()}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def cpu_seconds() -> tuple[float, float, float]:
    """(all CPUs busy, all CPUs total, this process) in seconds, from /proc/stat and os.times()."""
    ticks = os.sysconf("SC_CLK_TCK")
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]
    own = os.times()
    return (sum(fields) - idle) / ticks, sum(fields) / ticks, own.user + own.system


def stream_check(size_mb: int, work: Path) -> dict[str, Any]:
    """Parse one huge session file (no extraction): throughput and how much RSS the tailer adds."""
    path = work / "huge" / "-home-ana-src-huge" / "0badc0de-1b6e-4c0a-8f21-000000000001.jsonl"
    path.parent.mkdir(parents=True)
    writer = Writer(random.Random(3), "0badc0de-1b6e-4c0a-8f21-000000000001", "/home/ana/src/huge")
    with path.open("w", encoding="utf-8") as handle:
        while handle.tell() < size_mb << 20:
            handle.write("\n".join(writer.exchange()) + "\n")
    before = benchutil.rss_mb()
    messages = 0

    def count(events: Sequence[IngestEvent]) -> int:
        nonlocal messages
        messages += sum(len(e.messages) for e in events)
        return 0

    offsets = OffsetStore(work / "huge-state.db")
    started = time.perf_counter()
    tailer = Tailer([str(path.parent)], offsets, count)
    tailer.poll(one_shot=True)
    elapsed = time.perf_counter() - started
    offsets.close()
    return {
        "file_mb": round(path.stat().st_size / 2**20, 1),
        "lines": tailer.stats.lines,
        "messages": messages,
        "seconds": round(elapsed, 1),
        "mb_per_s": round(path.stat().st_size / 2**20 / elapsed, 1),
        "rss_before_mb": round(before, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


VARIANTS = {"default": "", "no-episodes": "[extract]\nstore_episodes = false\n"}


def run(tree: Path, data_dir: Path, variant: str = "default") -> dict[str, Any]:
    """The whole backfill; phases timed, embedder and store time measured inside extraction."""
    loaded = LoadedConfig(config=parse_config(VARIANTS[variant]), path=None, data_dir=data_dir)
    started = time.perf_counter()
    busy0, total0, own0 = cpu_seconds()
    rt: Runtime = open_runtime(loaded, warm_recall=False)  # as `tap ingest` opens it
    opened = time.perf_counter()
    rss = {"after_open_runtime": benchutil.rss_mb()}
    embedder = Timed(rt.worker.extraction.embedder, ["embed_documents", "embed_query"])
    store = Timed(rt.worker.extraction.store, ["add", "get", "search_vectors", "update_metadata"])
    rt.worker.extraction.embedder = embedder
    rt.worker.extraction.store = store
    offsets = OffsetStore(data_dir / "logtail.db")

    def sink(events: Sequence[IngestEvent]) -> int:
        return sum(rt.ingestor.ingest(event) for event in events)

    try:
        tailer = Tailer([str(tree)], offsets, sink)
        tailer.poll(one_shot=True)
        parsed = time.perf_counter()
        rss["after_parse_and_queue"] = benchutil.rss_mb()
        chunks = rt.worker.drain()
        done = time.perf_counter()
        counters = dict(rt.worker.extraction.counters)
        stats = tailer.stats
    finally:
        offsets.close()
        rt.close()
    busy1, total1, own1 = cpu_seconds()
    extract_s = done - parsed
    total_s = done - opened
    others = max(0.0, (busy1 - busy0) - (own1 - own0)) / max(1e-9, total1 - total0)
    return {
        "turns": stats.turns,
        "lines_read": stats.lines,
        "chunks": chunks,
        "memories": {k: counters.get(k, 0) for k in ("add", "update", "supersede", "noop", "episode")},
        "seconds": {
            "open_runtime": round(opened - started, 2),
            "parse_and_queue": round(parsed - opened, 2),
            "chunk_gate_extract_store": round(extract_s, 2),
            "end_to_end": round(total_s, 2),
        },
        "turns_per_s": round(stats.turns / total_s, 1),
        "lines_per_s_parse_and_queue": round(stats.lines / (parsed - opened), 0),
        "embedder": {
            "seconds": round(embedder.seconds, 2),
            "calls": embedder.calls,
            "share_of_end_to_end": round(embedder.seconds / total_s, 3),
            "by_method": embedder.breakdown(),
        },
        "store": {
            "seconds": round(store.seconds, 2),
            "calls": store.calls,
            "share_of_end_to_end": round(store.seconds / total_s, 3),
            "by_method": store.breakdown(),
        },
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "rss_mb": {k: round(v, 1) for k, v in rss.items()},
        "cpu": {
            "process_s": round(own1 - own0, 1),
            "turns_per_cpu_s": round(stats.turns / max(1e-9, own1 - own0), 1),
            "other_processes_pct_of_all_cores": round(100 * others, 1),
        },
    }


def table_rows(result: dict[str, Any]) -> list[tuple[str, str]]:
    """The printed summary of a backfill result."""
    generated, seconds, rss, cpu = result["input"], result["seconds"], result["rss_mb"], result["cpu"]
    embedder, store = result["embedder"], result["store"]
    return [
        (
            "input",
            f"{generated['lines']:,} lines, {generated['bytes'] / 1e6:.1f} MB, "
            f"{generated['projects']} projects, {generated['sessions']} sessions",
        ),
        ("turns queued", f"{result['turns']:,} in {result['chunks']:,} chunks"),
        ("memories", ", ".join(f"{k} {v}" for k, v in result["memories"].items())),
        ("parse + queue", f"{seconds['parse_and_queue']} s ({result['lines_per_s_parse_and_queue']:,.0f} lines/s)"),
        ("chunk..store", f"{seconds['chunk_gate_extract_store']} s"),
        ("embedder share", f"{embedder['seconds']} s ({100 * embedder['share_of_end_to_end']:.0f}%)"),
        ("store share", f"{store['seconds']} s ({100 * store['share_of_end_to_end']:.0f}%)"),
        ("end to end", f"{seconds['end_to_end']} s → {result['turns_per_s']} turns/s (target ≥ 150)"),
        (
            "peak RSS",
            f"{result['peak_rss_mb']} MB (target ≤ 500); {rss['after_open_runtime']} MB after opening the "
            f"runtime, {rss['after_parse_and_queue']} MB after parsing",
        ),
        (
            "CPU",
            f"{cpu['process_s']} s in this process ({cpu['turns_per_cpu_s']} turns per CPU-s); "
            f"other processes used {cpu['other_processes_pct_of_all_cores']}% of all cores",
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--keep", type=Path, default=None, help="generate the tree here and keep it")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--stream-mb",
        type=int,
        default=0,
        help="instead: stream one session file of this many MB through the tailer (parsing only)",
    )
    parser.add_argument(
        "--config-variant",
        choices=sorted(VARIANTS),
        default="default",
        help="default: the offline default config (rules + episodes); no-episodes: store_episodes = false",
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tap-bench-ingest-"))
    if args.stream_mb:
        try:
            streamed = {"machine": benchutil.machine(), **stream_check(args.stream_mb, work)}
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print(json.dumps(streamed, indent=2))
        benchutil.write_result("ingest-stream", streamed, args.out)
        return
    tree = args.keep or work / "projects"
    try:
        generated = generate(tree, args.lines)
        result = {
            "machine": benchutil.machine(),
            "config": VARIANTS[args.config_variant] or "(defaults: [extract] provider = rules, store_episodes = true)",
            "input": generated,
            **run(tree, work / "data", args.config_variant),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result["targets"] = {
        "turns_per_s": 150,
        "peak_rss_mb": 500,
        "met": result["turns_per_s"] >= 150 and result["peak_rss_mb"] <= 500,
    }
    name = "ingest" if args.config_variant == "default" else f"ingest-{args.config_variant}"
    path = benchutil.write_result(name, result, args.out)
    rows = table_rows(result)
    print(benchutil.table(["ingest backfill", "value"], rows))
    print(f"\nwritten to {path}")


if __name__ == "__main__":
    main()
