"""The history of benchmark results: bench/results/history.jsonl, one line per earlier run.

bench/results holds one current result per benchmark (the docs' plots and tables read them,
bench/plots.py). When a benchmark writes its result again (benchutil.write_result), the run it
replaces is summarised here first: its file name, benchmark, date, the commit that last wrote it,
its headline numbers (the numeric values of the result, nested keys joined by dots, lists and the
descriptive parts left out) and the `git show` line that brings the whole file back.

``python bench/history.py FILE…`` moves result files out of bench/results into the history (a run
kept under another name, an A/B arm); each line is written before its file is removed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
HISTORY = RESULTS / "history.jsonl"
SKIPPED = frozenset({"machine", "method", "rows", "misses_sample", "questions", "data", "findings", "tap_status"})
MAX_FIGURES = 60


def headline(result: Any, prefix: str = "", found: dict[str, float] | None = None) -> dict[str, float]:
    """The numeric values of a result by their dotted key (lists and descriptive parts left out)."""
    found = {} if found is None else found
    if isinstance(result, dict):
        for key, value in result.items():
            if key not in SKIPPED and len(found) < MAX_FIGURES:
                headline(value, f"{prefix}.{key}" if prefix else str(key), found)
    elif isinstance(result, int | float) and not isinstance(result, bool):
        found[prefix] = result
    return found


def git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else ""


def entry(path: Path) -> dict[str, Any]:
    """The history line of one result file."""
    result = json.loads(path.read_text(encoding="utf-8"))
    relative = path.resolve().relative_to(ROOT).as_posix() if path.resolve().is_relative_to(ROOT) else str(path)
    commit = git("log", "-1", "--format=%H", "--", relative)
    machine = result.get("machine") if isinstance(result.get("machine"), dict) else {}
    return {
        "file": path.name,
        "benchmark": result.get("benchmark") or path.stem.split("-")[0],
        "date": machine.get("date_utc") or (git("log", "-1", "--format=%cI", "--", relative) or None),
        "commit": commit or None,
        "whole_file": f"git show {commit[:12]}:{relative}" if commit else None,
        "headline": headline(result),
    }


def archive(path: Path, history: Path = HISTORY) -> None:
    """Append the history line of the result file at `path` (one that is about to be replaced)."""
    line = json.dumps(entry(path), ensure_ascii=False, separators=(",", ":"))
    with history.open("a", encoding="utf-8") as out:
        out.write(line + "\n")


def main() -> None:
    for name in sys.argv[1:]:
        path = Path(name)
        archive(path)
        path.unlink()
        print(f"{path.name} → {HISTORY.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
