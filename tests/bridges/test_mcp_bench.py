"""Smoke run of bench/mcp.py in its tiny mode: it must run as a user runs it and write its result."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def test_mcp_benchmark_runs_and_reports(tmp_path: Path) -> None:
    out = tmp_path / "mcp.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "mcp.py"), "--quick", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(out.read_text())
    assert result["benchmark"] == "mcp" and result["machine"]["cpus"]
    assert result["http"]["search_ms"]["n"] == 8 and result["in_process"]["tool_ms"]["n"] == 8
    assert result["stdio_with_server"]["start_ms"]["n"] == 1 and result["verdict"]["search_p50_ms"] > 0
