"""The CLI start-up benchmark (bench/cli.py) runs in its tiny mode and writes its result.

Nothing is timed or compared here (the machine may be busy; speed is the benchmark's to report):
the run must exit 0 and time every command in both modes, wall clock and CPU, next to the
interpreter baseline. That the commands against a running server leave the store and the model
to it is tested on what they import (tests/tap/cli/test_cli_startup.py), not on how long they take.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = {
    "python -c pass",
    "tap --help",
    "tap status",
    "tap memories list",
    "tap recall TEXT",
    "tap env",
    "tap mitm ca",
}

pytestmark = pytest.mark.slow


def test_cli_benchmark_quick_run(tmp_path: Path) -> None:
    out = tmp_path / "cli.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "cli.py"), "--quick", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(out.read_text())
    for mode in ("with_server", "without_server"):
        assert set(result[mode]) == COMMANDS
        assert all(row["runs"] == 2 and row["median_s"] > 0 for row in result[mode].values())
        assert result[mode]["python -c pass"]["ratio_to_python"] == 1.0
        assert all("cpu_median_s" in row for row in result[mode].values())
    assert "meets_target" in result["with_server"]["tap status"]
    assert "meets_target" in result["without_server"]["tap recall TEXT"]
