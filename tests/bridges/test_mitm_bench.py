"""Smoke run of bench/mitm.py in its tiny mode: it must run as a user runs it and write its result."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def test_mitm_benchmark_runs_and_reports(tmp_path: Path) -> None:
    out = tmp_path / "mitm.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "mitm.py"), "--quick", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(out.read_text())
    assert result["benchmark"] == "mitm" and result["mode"] == "quick" and result["machine"]["cpus"]
    latency = result["non_streaming"]["latency"]
    assert latency["baseline_p50_ms"] > 0 and latency["tap_p50_ms"] > 0 and latency["ratio_p50"] > 0
    assert result["non_streaming"]["recalled_mean"] > 0, "the addon injected memories"
    assert result["streaming"]["errors"] == 0 and result["concurrent"]["tap"]["errors"] == 0
    assert result["streaming"]["gaps"]["baseline_gap_ms"]["n"] > 0
