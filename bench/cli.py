"""Benchmark of the CLI's start-up: wall time of `tap --help`, `tap status`, `tap memories list`,
`tap recall TEXT`, `tap env` and `tap mitm ca`, with a `tap serve` running on the data dir and
without one.

Run: ``./dev bench cli [--runs 7] [--memories 50] [--quick] [--out FILE]``. Writes
``bench/results/cli.json`` and prints a table. Each command is run as a user runs it (the venv's
`tap` script, a new process each time, output to a pipe) `--runs` times; the median counts. The
machine is shared, so every round also times ``python -c pass`` (the interpreter alone) and each
command is reported as a ratio to that baseline's median as well. Rounds interleave the baseline
and the commands, so both see the same load. The commands run with Python's bytecode cache, as an
installed tap does (PYTHONDONTWRITEBYTECODE is dropped for them: the unmeasured first run writes
tap's `__pycache__`; with it set, every run would compile tap's own modules again). Target: each
command ≤ 0.5 s, with a server and without one. Without a server `tap status` and `tap memories
list` read the store's read view (the lexical index's records alone: tap.wiring.cli_reads) and
`tap recall` loads the embedder and the scope's vectors too; the store the benchmark leaves was
closed cleanly, so the view answers (what it cannot answer exactly, such as old versions, opens
the store: seconds, not measured here). The CPU seconds each process used
(median) are recorded too: less sensitive to other load than wall time.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchutil import ROOT, machine, table, write_result
from tapserve import Api, Server

TARGET_S = 0.5
QUERY = "where does the user live?"
COMMANDS: dict[str, list[str]] = {
    "tap --help": ["--help"],
    "tap status": ["status"],
    "tap memories list": ["memories", "list"],
    "tap recall TEXT": ["recall", QUERY],
    "tap env": ["env"],
    "tap mitm ca": ["mitm", "ca"],
}
FACTS = [
    "The user moved to Lisbon in May",
    "The user prefers green tea to coffee",
    "The user's sister Ana is a nurse in Porto",
    "The user runs a half marathon every October",
    "The user is allergic to peanuts",
]


def tap_command() -> list[str]:
    """The `tap` console script next to this interpreter (what a user runs), else `python -m tap`."""
    script = Path(sys.executable).with_name("tap")
    return [str(script)] if script.exists() else [sys.executable, "-m", "tap"]


def timed_run(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall seconds from spawn to exit, CPU seconds the process used); the command must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode(errors='replace')}")
    return elapsed, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def measure(runs: int, env: dict[str, str], cwd: Path) -> dict[str, list[tuple[float, float]]]:
    """`runs` interleaved rounds of the baseline and every command; (wall, CPU) seconds per run."""
    tap = tap_command()
    argvs = {"python -c pass": [sys.executable, "-c", "pass"]} | {k: tap + v for k, v in COMMANDS.items()}
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in argvs}
    for argv in argvs.values():  # warm the file cache once, not measured
        timed_run(argv, env, cwd)
    for _ in range(runs):
        for name, argv in argvs.items():
            times[name].append(timed_run(argv, env, cwd))
    return times


def summarise(times: dict[str, list[tuple[float, float]]]) -> dict[str, Any]:
    """Median and min wall time per command, median CPU time, and the ratio of wall medians to
    the interpreter baseline's."""
    base = statistics.median(wall for wall, _ in times["python -c pass"])
    out: dict[str, Any] = {}
    for name, pairs in times.items():
        values = [wall for wall, _ in pairs]
        median = statistics.median(values)
        row: dict[str, Any] = {
            "median_s": round(median, 3),
            "min_s": round(min(values), 3),
            "cpu_median_s": round(statistics.median(cpu for _, cpu in pairs), 3),
            "runs": len(values),
            "ratio_to_python": round(median / base, 1),
        }
        if name != "python -c pass":
            row["meets_target"] = median <= TARGET_S
        out[name] = row
    return out


def seed(server: Server, count: int) -> None:
    """`count` memories in the default scope, through the admin API."""
    api = Api(server.url, server.token)
    for index in range(count):
        fact = FACTS[index % len(FACTS)]
        api.call("POST", "/tap/memories", {"scope": "default", "content": f"{fact} (note {index})"}, expect=201)


def run(runs: int, memories: int) -> dict[str, Any]:
    """Both modes in one data dir: with the server (seeded through it), then after it stopped."""
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="tap-bench-cli-") as tmp:
        home, cwd = Path(tmp) / "home", Path(tmp)
        home.mkdir()
        drop = ("TAP_CONFIG", "TAP_ADMIN_TOKEN", "PYTHONDONTWRITEBYTECODE")  # see the module docstring
        env = {k: v for k, v in os.environ.items() if k not in drop}
        env["TAP_HOME"] = str(home)
        server = Server(home, "", code=ROOT).start()
        try:
            seed(server, memories)
            with_server = measure(runs, env, cwd)
        finally:
            server.stop()
        without_server = measure(runs, env, cwd)
    return {
        "machine": machine()
        | {"loadavg_1m_before": round(load_before[0], 2), "loadavg_1m_after": round(os.getloadavg()[0], 2)},
        "target_s": TARGET_S,
        "memories": memories,
        "with_server": summarise(with_server),
        "without_server": summarise(without_server),
    }


def print_table(result: dict[str, Any]) -> None:
    rows = []
    for name in ["python -c pass", *COMMANDS]:
        a, b = result["with_server"][name], result["without_server"][name]
        rows.append((name, a["median_s"], a["cpu_median_s"], a["ratio_to_python"], b["median_s"], b["ratio_to_python"]))
    headers = ("command", "server: median s", "CPU s", "× python", "no server: median s", "× python")
    print(table(headers, rows))
    print(
        f"load average (1 min) before / after: {result['machine']['loadavg_1m_before']} / "
        f"{result['machine']['loadavg_1m_after']} on {result['machine']['cpus']} CPUs"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=7, help="Timed runs per command and mode (median counts).")
    parser.add_argument("--memories", type=int, default=50, help="Memories in the data dir.")
    parser.add_argument("--quick", action="store_true", help="Two runs and five memories (smoke test).")
    parser.add_argument("--out", type=Path, default=None, help="Result file (default: bench/results/cli.json).")
    args = parser.parse_args()
    runs, memories = (2, 5) if args.quick else (args.runs, args.memories)
    result = run(runs, memories)
    print_table(result)
    print(f"wrote {write_result('cli', result, args.out)}")


if __name__ == "__main__":
    main()
