"""Smoke run of bench/hooks.py in its tiny mode: it must run as a user runs it and write its result."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def test_hooks_benchmark_runs_and_reports(tmp_path: Path) -> None:
    out = tmp_path / "hooks.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "hooks.py"), "--quick", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(out.read_text())
    assert result["benchmark"] == "hooks" and result["machine"]["cpus"]
    assert result["command_hook"]["wall_ms"]["n"] == 8 and result["command_hook"]["with_context"] > 0
    assert result["imports"]["heavy_imported"] == []
    assert result["verdict"]["meets"]["no_heavy_imports"] is True
