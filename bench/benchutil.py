"""Helpers shared by the benchmarks in bench/: machine description, percentiles, results, tables.

Benchmarks are scripts (``./dev bench NAME`` runs ``bench/NAME.py``); this module sits beside them
and is imported as ``benchutil`` (the script's directory is on ``sys.path``; importing it moves that
directory after the installed packages). It also puts the repo root on ``sys.path``, so a benchmark
can use what it shares with the tests: ``testkit`` (a real ``tap serve`` process, a Chroma server,
fake upstreams). Nothing here imports from tests/.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = Path(__file__).resolve().parent / "results"

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
# Python puts a script's own folder first on sys.path, so a benchmark named like a package would
# stand in for it in every benchmark (bench/mcp.py for the MCP SDK, `mcp`, which `tap serve`
# imports): the folder goes last, after the installed packages; the benchmarks' own modules
# (corpus, tapserve, …) import from it as before.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != _HERE] + [str(_HERE)]

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from results_history import archive  # noqa: E402

from tap.cli.progress import Bar, shown  # noqa: E402  (re-exported for the benchmarks)

__all__ = ["Bar", "note"]


def bench_proxy() -> ModuleType:
    """bench/proxy.py (its store builder, fake upstream and client) under the name `bench_proxy`:
    `proxy` is also tap's aiohttp package. Loaded once per process."""
    loaded = sys.modules.get("bench_proxy")
    if loaded is not None:
        return loaded
    spec = importlib.util.spec_from_file_location("bench_proxy", Path(__file__).with_name("proxy.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_proxy"] = module
    spec.loader.exec_module(module)
    return module


def note(text: str) -> None:
    """A progress line on stderr, only when it is a terminal (a log or CI run gets the results only)."""
    if shown():
        print(text, file=sys.stderr, flush=True)


def cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo (Linux), else platform.processor()."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def memory_total_gb() -> float:
    """Total RAM in GB (Linux /proc/meminfo), NaN elsewhere."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return float("nan")


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    return {
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "ram_gb": memory_total_gb(),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def percentile(values: Sequence[float], pct: float) -> float:
    """The pct-th percentile (inclusive method, linear interpolation); NaN for no values."""
    if not values:
        return float("nan")
    if len(values) == 1:
        return float(values[0])
    ordered = sorted(values)
    rank = (len(ordered) - 1) * pct / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return float(ordered[low] + (ordered[high] - ordered[low]) * (rank - low))


def summary_ms(values: Sequence[float], digits: int = 2) -> dict[str, float]:
    """n, p50, p95, p99, max and mean of a list of milliseconds."""
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "p50": round(percentile(values, 50), digits),
        "p95": round(percentile(values, 95), digits),
        "p99": round(percentile(values, 99), digits),
        "max": round(max(values), digits),
        "mean": round(statistics.fmean(values), digits),
    }


def rss_mb(pid: int | str = "self", *, tree: bool = False) -> float:
    """Resident set size of a process (VmRSS from /proc/PID/status), in MB; with `tree`, of the
    process and every process under it (`tap serve` and its recall process)."""
    if tree:
        return sum(rss_mb(each) for each in process_tree(pid))
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def cpu_seconds(pid: int | str = "self", *, tree: bool = False) -> float:
    """User + system CPU time a process has used so far (/proc/PID/stat), in seconds; NaN where
    /proc is missing. With `tree`, also what the processes under it use while they run."""
    if tree:
        return sum(cpu_seconds(each) for each in process_tree(pid))
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_tree(pid: int | str) -> list[int]:
    """The process and its descendants that are alive now (Linux /proc; just the process elsewhere)."""
    root = os.getpid() if pid == "self" else int(pid)
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        parents.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        each = todo.pop()
        found.append(each)
        todo.extend(parents.get(each, []))
    return found


def write_result(name: str, result: dict[str, Any], out: Path | None = None) -> Path:
    """Write `result` as pretty JSON to bench/results/NAME.json (or `out`); returns the path. The
    current result it replaces in bench/results is summarised in history.jsonl first."""
    path = out or RESULTS_DIR / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.resolve().parent == RESULTS_DIR.resolve():
        archive(path)
    path.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    return path


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain-text table with right-aligned numbers."""
    cells = [[str(h) for h in headers], *[[_cell(v) for v in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = []
    for index, row in enumerate(cells):
        parts = [value.ljust(widths[i]) if i == 0 else value.rjust(widths[i]) for i, value in enumerate(row)]
        lines.append("  ".join(parts))
        if index == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}"
    return str(value)
