"""Smoke runs of every benchmark in bench/ in its tiny mode, so CI catches a broken benchmark.

Nothing is timed or compared against a target here: each benchmark runs as a user would run it
(``python bench/NAME.py --quick``, a subprocess), must exit 0 and must write a JSON result with
its main sections. The LoCoMo data (CC BY-NC, outside the repo) is optional: the synthetic mini
conversation always runs; the one-conversation LoCoMo run is skipped when the data is absent.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
LOCOMO = Path(os.environ.get("TAP_LOCOMO_DATA", ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"))

pytestmark = pytest.mark.slow


def run_bench(name: str, out: Path, *args: str, timeout: float = 120) -> dict[str, Any]:
    """Run bench/NAME.py with args and --out; return the JSON it wrote."""
    done = subprocess.run(
        [sys.executable, str(BENCH / f"{name}.py"), *args, "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, f"bench/{name}.py failed:\n{done.stdout}\n{done.stderr}"
    assert "written to" in done.stdout
    result: dict[str, Any] = json.loads(out.read_text())
    assert result["benchmark"] == name
    assert result["machine"]["cpus"]
    return result


def test_locomo_synthetic(tmp_path: Path) -> None:
    result = run_bench("locomo", tmp_path / "locomo.json", "--synthetic")
    assert result["mode"] == "synthetic"
    assert set(result["variants"]) == {"default", "no-episodes"}
    tap = result["variants"]["default"]["tap"]
    assert tap["cats_1_4"]["n"] == 5
    assert 0 < tap["mean_tokens"] <= 500
    assert "bm25_raw_turns" in result["baselines"]
    assert "shuffled_citations" in result["variants"]["default"]["controls"]


@pytest.mark.skipif(not LOCOMO.is_file(), reason=f"LoCoMo data not found at {LOCOMO} (set TAP_LOCOMO_DATA)")
def test_locomo_one_conversation(tmp_path: Path) -> None:
    result = run_bench(
        "locomo", tmp_path / "locomo.json", "--quick", "--data", str(LOCOMO), "--config-variant", "default"
    )
    assert result["mode"] == "quick"
    assert result["conversations"] == ["conv-26"]
    assert result["variants"]["default"]["tap"]["cats_1_4"]["n"] > 0


def test_recall(tmp_path: Path) -> None:
    result = run_bench("recall", tmp_path / "recall.json", "--quick")
    (point,) = result["points"]
    assert point["memories"] == 200
    assert point["end_to_end_ms"]["n"] == 20
    assert result["serve"]["200"]["idle_rss_mb"] > 0


def test_proxy(tmp_path: Path) -> None:
    result = run_bench("proxy", tmp_path / "proxy.json", "--quick")
    assert result["non_streaming"]["errors"] == 0
    assert result["streaming"]["errors"] == 0
    assert set(result["throughput"]) == {"1", "4"}
    assert result["throughput"]["4"]["tap"]["errors"] == 0
