"""Agent hook latency: what tap's hooks add to an agent run, with a running `tap serve`.

Run: ``./dev bench hooks [--memories 1000] [--runs 60] [--claude-rounds 12] [--quick] [--out FILE]``.
Writes ``bench/results/hooks.json`` and prints a table. Targets: one `tap hook user-prompt-submit`
p50 ≤ 150 ms, and the hook time a `claude -p` run waits for ≤ 150 ms (p50).

Per `claude -p` run (one session, one prompt), Claude Code runs SessionStart, UserPromptSubmit,
Stop and SessionEnd. The sample `per_run` replays that sequence with the hook commands exactly as
installed (the same JSON on stdin, a transcript that grows by one exchange per run) and adds up the
processes Claude Code waits for: with the layout before (every hook blocking, SessionStart on every
start) all four; with tap's layout now (bridges.hooks.install: Stop and SessionEnd `async`,
SessionStart only on clear|compact, the digest with the first prompt) UserPromptSubmit alone.
Where node and npm can install Claude Code (testkit/clients/npm.py), `claude_p` also times the real
`claude -p` against a fake model API on loopback, with no hooks, the old layout and the new one,
interleaved round by round (its spread on a shared machine is large: read the paired differences).

Method: one data dir with `--memories` synthetic memories (bench/corpus.py) in the scope of a
project folder (a `.git` inside, so the hook's per-project scope is that folder); a real
`tap serve` subprocess on it. Each sample is what Claude Code does on a prompt: start the installed
`tap` script as a new process, write the hook JSON to its stdin, read its stdout until it exits;
the wall time of that whole process is the sample. Every sample is a new session with its own
question (bench/corpus.py queries), so recall always runs and no ledger shortens it. Measured in
the same run for comparison:
- `python -c pass` with the same interpreter (the floor any command hook pays);
- the `http` hook: the same JSON POSTed to `POST /tap/hooks/user-prompt-submit` over one
  keep-alive connection (what Claude Code's `http` hook type costs: no process start);
- `tap hook stop` with a transcript that grew by one exchange (the hook only hands over; the
  server reads the transcript in the background);
- the modules the hook process imports (`python -X importtime`): none of chromadb, onnxruntime,
  anthropic, aiohttp, msgspec may appear;
- without a server: `tap hook user-prompt-submit` opening the embedded store itself (a few runs).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import benchutil
import corpus

from bridges.hooks.install import HookCall, entries, group_matchers, merged
from tap.config import LoadedConfig, parse_config
from tap.wiring.runtime import open_runtime
from testkit.agent_hooks import Transcript, payload
from testkit.serve_process import ServeProcess
from testkit.waits import wait_until

TARGETS = {"prompt_p50_ms": 150.0, "per_run_blocking_p50_ms": 150.0}
HEAVY = ("chromadb", "onnxruntime", "anthropic", "aiohttp", "msgspec", "numpy", "telegram", "click")
TAP = str(Path(sys.executable).with_name("tap"))


def environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TAP_CONFIG", "TAP_ADMIN_TOKEN")}
    env["TAP_HOME"] = str(home)
    return env


def timed(args: Sequence[str], body: bytes, env: dict[str, str]) -> tuple[float, bytes]:
    """Wall milliseconds of one process, and its stdout."""
    started = time.perf_counter()
    done = subprocess.run(list(args), input=body, capture_output=True, env=env, timeout=60, check=True)
    return (time.perf_counter() - started) * 1000, done.stdout


def build_store(home: Path, project: Path, memories: int) -> float:
    rt = open_runtime(LoadedConfig(config=parse_config(""), path=None, data_dir=home))
    try:
        pool = corpus.Corpus(rt.embedder, pool=min(1500, max(100, memories // 10)))
        return corpus.fill(rt.store, pool, memories, scope=str(project)) + pool.embed_s
    finally:
        rt.close()


def prompt_runs(home: Path, project: Path, config: Path, questions: list[str], tag: str) -> dict[str, Any]:
    env = environment(home)
    times, answered = [], 0
    for index, question in enumerate(questions):
        body = payload("UserPromptSubmit", f"{tag}-{index}", project, None, prompt=question)
        ms, out = timed([TAP, "--config", str(config), "hook", "user-prompt-submit"], body, env)
        times.append(ms)
        answered += bool(out.strip())
    return {"wall_ms": benchutil.summary_ms(times), "with_context": answered}


def http_runs(url: str, token: str, project: Path, questions: list[str]) -> dict[str, Any]:
    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80, timeout=10)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    times = []
    for index, question in enumerate(questions):
        body = payload("UserPromptSubmit", f"http-{index}", project, None, prompt=question)
        started = time.perf_counter()
        connection.request("POST", "/tap/hooks/user-prompt-submit", body=body, headers=headers)
        response = connection.getresponse()
        response.read()
        times.append((time.perf_counter() - started) * 1000)
        assert response.status == 200, response.status
    connection.close()
    return {"request_ms": benchutil.summary_ms(times)}


def stop_runs(home: Path, project: Path, config: Path, runs: int) -> dict[str, Any]:
    env = environment(home)
    transcript = Transcript(home / "claude" / "projects" / "-bench" / "bench-stop.jsonl", "bench-stop", project)
    times = []
    for index in range(runs):
        transcript.user(f"Remember that build {index} used cache key k{index}.")
        transcript.assistant(f"Noted: build {index}, key k{index}.")
        body = payload("Stop", "bench-stop", project, transcript.path, stop_hook_active=False)
        ms, _ = timed([TAP, "--config", str(config), "hook", "stop"], body, env)
        times.append(ms)
    return {"wall_ms": benchutil.summary_ms(times)}


def imports(home: Path, project: Path, config: Path) -> dict[str, Any]:
    code = "import sys; from tap.cli.launch import main; sys.argv = ['tap'] + sys.argv[1:]; main()"
    body = payload("UserPromptSubmit", "imports", project, None, prompt="what do we deploy on?")
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code, "--config", str(config), "hook", "user-prompt-submit"],
        input=body,
        capture_output=True,
        env=environment(home),
        timeout=60,
        check=True,
    )
    lines = [line for line in done.stderr.decode().splitlines() if line.startswith("import time:") and "|" in line]
    names = {line.split("|")[-1].strip() for line in lines}
    top = {name.split(".")[0] for name in names}
    return {"modules": len(names), "heavy_imported": sorted(top & set(HEAVY))}


def python_floor(runs: int) -> dict[str, Any]:
    times = [timed([sys.executable, "-c", "pass"], b"", dict(os.environ))[0] for _ in range(runs)]
    return {"wall_ms": benchutil.summary_ms(times)}


def layouts(config: Path, home: Path) -> dict[str, dict[str, Any]]:
    """Claude Code settings with tap's hooks: the layout installed before (every hook blocking,
    SessionStart on every start) and the one `tap hooks install` writes now."""
    command = f"TAP_HOME={home} {TAP} --config {config}"
    now = merged({}, entries("claude", HookCall(command)), Path("settings.json"), group_matchers("claude"))
    before = json.loads(json.dumps(now))
    for groups in before["hooks"].values():
        for group in groups:
            group.pop("matcher", None)
            for hook in group["hooks"]:
                hook.pop("async", None)
    return {"before": before, "now": now}


def blocking(settings: dict[str, Any], event: str, source: str = "") -> list[str]:
    """The commands Claude Code waits for when `event` fires (async hooks and unmatched groups left out)."""
    found = []
    for group in settings["hooks"].get(event, []):
        matcher = group.get("matcher")
        if event == "SessionStart" and matcher and source not in matcher.split("|"):
            continue
        found += [hook["command"] for hook in group["hooks"] if not hook.get("async")]
    return found


def per_run(home: Path, project: Path, settings: dict[str, Any], questions: list[str], tag: str) -> dict[str, Any]:
    """The hook time one `claude -p` run waits for, replayed with the installed commands."""
    env = environment(home)
    totals, processes = [], 0
    for index, question in enumerate(questions):
        session = f"{tag}-{index}"
        transcript = Transcript(home / "claude" / "projects" / "-bench" / f"{session}.jsonl", session, project)
        steps = [
            ("SessionStart", "startup", payload("SessionStart", session, project, transcript.path, source="startup")),
            ("UserPromptSubmit", "", payload("UserPromptSubmit", session, project, transcript.path, prompt=question)),
        ]
        total = 0.0
        for event, source, body in steps:
            for command in blocking(settings, event, source):
                total += timed(["sh", "-c", command], body, env)[0]
                processes += 1
        transcript.user(question)
        transcript.assistant(f"Answer {index}: noted.")
        ends = [
            ("Stop", payload("Stop", session, project, transcript.path, stop_hook_active=False)),
            ("SessionEnd", payload("SessionEnd", session, project, transcript.path, reason="other")),
        ]
        for event, body in ends:
            for command in blocking(settings, event):
                total += timed(["sh", "-c", command], body, env)[0]
                processes += 1
        totals.append(total)
    return {"blocking_ms": benchutil.summary_ms(totals), "processes_per_run": processes / max(1, len(questions))}


def claude_p(
    home: Path, project: Path, server: ServeProcess, settings: dict[str, dict[str, Any]], rounds: int
) -> dict[str, Any]:
    """The real `claude -p` (when npm can install it): wall time with no hooks, before and now."""
    from testkit.clients import agents
    from testkit.clients.npm import CLAUDE_CODE, ClientUnavailable, binary, install, installed_version

    try:
        folder = install(CLAUDE_CODE)
    except ClientUnavailable as exc:
        return {"skipped": str(exc)}
    port_file = home / "fake-upstream.port"
    upstream = subprocess.Popen([sys.executable, str(Path(__file__).with_name("fake_upstream.py")), str(port_file)])
    try:
        wait_until(port_file.exists, within=30, what="the fake model API")
        url = f"http://127.0.0.1:{port_file.read_text().strip()}"
        homes = {}
        for name in ("none", *settings):
            homes[name] = home / f"claude-{name}"
            (homes[name] / ".claude").mkdir(parents=True)
            if name != "none":
                (homes[name] / ".claude" / "settings.json").write_text(json.dumps(settings[name]))
        walls: dict[str, list[float]] = {name: [] for name in homes}
        for index in range(rounds + 1):  # the first round warms the caches and is not counted
            for name, claude_home in homes.items():
                env = agents.claude_environment(claude_home, url, {"TAP_HOME": str(server.home)})
                started = time.perf_counter()
                done = subprocess.run(
                    [str(binary(folder, CLAUDE_CODE)), "-p", f"question {index}"],
                    env=env,
                    cwd=project,
                    capture_output=True,
                    timeout=120,
                    check=False,
                )
                if done.returncode != 0:
                    return {"skipped": f"claude -p failed: {done.stderr.decode(errors='replace')[-300:]}"}
                if index:
                    walls[name].append((time.perf_counter() - started) * 1000)
    finally:
        upstream.terminate()
        upstream.wait(10)
    added = {
        name: benchutil.summary_ms([w - n for w, n in zip(walls[name], walls["none"], strict=True)])
        for name in settings
    }
    return {
        "version": installed_version(folder, CLAUDE_CODE),
        "wall_ms": {name: benchutil.summary_ms(values) for name, values in walls.items()},
        "added_ms": added,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    questions = corpus.queries(args.runs)
    # detached Stop and SessionEnd children may still be writing when the run ends
    with tempfile.TemporaryDirectory(prefix="tap-bench-hooks-", ignore_cleanup_errors=True) as tmp:
        home, project = Path(tmp) / "home", Path(tmp) / "project"
        (project / ".git").mkdir(parents=True)
        config = Path(tmp) / "tap.toml"
        config.write_text("")
        build_s = build_store(home, project, args.memories)
        embedded = prompt_runs(home, project, config, questions[: args.embedded_runs], "embedded")
        server = ServeProcess(home, config=config).start(timeout=120)
        try:
            prompt_runs(home, project, config, questions[:3], "warm-up")
            floor = python_floor(max(5, args.runs // 3))
            command = prompt_runs(home, project, config, questions, "command")
            http = http_runs(server.url, server.token, project, questions)
            stop = stop_runs(home, project, config, max(3, args.runs // 4))
            imported = imports(home, project, config)
            settings = layouts(config, home)
            run_count = max(5, args.runs // 3)
            runs = {
                name: per_run(home, project, layout, corpus.queries(run_count), f"run-{name}")
                for name, layout in settings.items()
            }
            claude = claude_p(home, project, server, settings, args.claude_rounds) if args.claude_rounds else {}
        finally:
            server.stop()
    p50 = command["wall_ms"]["p50"]
    per_run_p50 = runs["now"]["blocking_ms"]["p50"]
    return {
        "benchmark": "hooks",
        "machine": benchutil.machine(),
        "method": {
            "sample": "wall time of one `tap hook user-prompt-submit` process (the installed script), hook JSON on "
            "stdin, with a running `tap serve` on the same machine; a new session and question per sample",
            "store": f"{args.memories} synthetic memories in the project's scope (bench/corpus.py), "
            f"built in {build_s:.1f} s",
            "load": "other jobs may share the 2 cores; `python -c pass` is measured in the same run as the floor",
        },
        "targets": TARGETS,
        "python_floor": floor,
        "command_hook": command,
        "http_hook": http,
        "stop_hook": stop,
        "embedded_no_server": embedded,
        "imports": imported,
        "per_run": runs,
        "claude_p": claude,
        "verdict": {
            "prompt_p50_ms": p50,
            "above_python_floor_p50_ms": round(p50 - floor["wall_ms"]["p50"], 2),
            "per_run_blocking_p50_ms": {name: r["blocking_ms"]["p50"] for name, r in runs.items()},
            "per_run_now_over_before": round(per_run_p50 / runs["before"]["blocking_ms"]["p50"], 3),
            "meets": {
                "prompt_p50": p50 <= TARGETS["prompt_p50_ms"],
                "per_run_blocking_p50": per_run_p50 <= TARGETS["per_run_blocking_p50_ms"],
                "no_heavy_imports": not imported["heavy_imported"],
            },
        },
    }


def print_report(result: dict[str, Any]) -> None:
    rows = [
        ["python -c pass", *_cells(result["python_floor"]["wall_ms"])],
        ["tap hook user-prompt-submit (server)", *_cells(result["command_hook"]["wall_ms"])],
        ["http hook request (server)", *_cells(result["http_hook"]["request_ms"])],
        ["tap hook stop (server)", *_cells(result["stop_hook"]["wall_ms"])],
        ["tap hook user-prompt-submit (no server)", *_cells(result["embedded_no_server"]["wall_ms"])],
        *[
            [f"hooks a claude -p run waits for ({name})", *_cells(r["blocking_ms"])]
            for name, r in result["per_run"].items()
        ],
    ]
    claude = result["claude_p"]
    for name, summary in claude.get("added_ms", {}).items():
        rows.append([f"claude -p {claude['version']}, added over no hooks ({name})", *_cells(summary)])
    print(benchutil.table(["ms", "n", "p50", "p95", "max"], rows))
    if "skipped" in claude:
        print(f"claude -p not timed: {claude['skipped']}")
    print(f"heavy modules imported by the hook process: {result['imports']['heavy_imported'] or 'none'}")
    print(f"verdict: {json.dumps(result['verdict'])}")


def _cells(summary: dict[str, float]) -> list[object]:
    return [int(summary["n"]), summary["p50"], summary["p95"], summary["max"]]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--embedded-runs", type=int, default=3)
    parser.add_argument("--claude-rounds", type=int, default=12, help="real `claude -p` rounds (0: none)")
    parser.add_argument("--quick", action="store_true", help="tiny run (smoke test)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.quick:
        args.memories, args.runs, args.embedded_runs, args.claude_rounds = 100, 8, 1, 0
    result = run(args)
    print_report(result)
    path = benchutil.write_result("hooks", result, args.out)
    print(f"written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
