"""Smoke runs of every benchmark in bench/ in its tiny mode, so CI catches a broken benchmark.

Nothing is timed or compared against a target here: each benchmark runs as a user would run it
(``python bench/NAME.py --quick``, a subprocess), must exit 0 and must write a JSON result with
its main sections. The LoCoMo data (CC BY-NC, outside the repo) is optional: the synthetic mini
conversation always runs; the one-conversation LoCoMo run is skipped when the data is absent.
The recall and proxy runs mostly wait for `tap serve` to start, so they run side by side.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
LOCOMO = Path(os.environ.get("TAP_LOCOMO_DATA", ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"))
TIMEOUT_S = 180

pytestmark = pytest.mark.slow


class BenchRun:
    """bench/NAME.py started in the background with --out; `result()` waits and checks it."""

    def __init__(self, name: str, out: Path, *args: str) -> None:
        self.name = name
        self.out = out
        self.log = out.with_suffix(".log")
        with self.log.open("w") as log:  # a file, not a pipe: nobody reads while the run goes on
            self.proc = subprocess.Popen(
                [sys.executable, str(BENCH / f"{name}.py"), *args, "--out", str(out)],
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                text=True,
            )

    def result(self) -> dict[str, Any]:
        """Wait for the run; it must exit 0 and write its JSON result."""
        try:
            self.proc.wait(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.stop()
            pytest.fail(f"bench/{self.name}.py did not finish in {TIMEOUT_S} s:\n{self.log.read_text()}")
        output = self.log.read_text()
        assert self.proc.returncode == 0, f"bench/{self.name}.py failed:\n{output}"
        assert "written to" in output
        result: dict[str, Any] = json.loads(self.out.read_text())
        assert result["benchmark"] == self.name
        assert result["machine"]["cpus"]
        return result

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def run_bench(name: str, out: Path, *args: str) -> dict[str, Any]:
    """Run bench/NAME.py with args and --out; return the JSON it wrote."""
    run = BenchRun(name, out, *args)
    try:
        return run.result()
    finally:
        run.stop()


@pytest.fixture(scope="module")
def speed_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, BenchRun]]:
    """The recall and proxy quick runs, started together."""
    out = tmp_path_factory.mktemp("bench-smoke")
    runs = {name: BenchRun(name, out / f"{name}.json", "--quick") for name in ("recall", "proxy")}
    yield runs
    for run in runs.values():
        run.stop()


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


def test_recall(speed_runs: dict[str, BenchRun]) -> None:
    result = speed_runs["recall"].result()
    (point,) = result["points"]
    assert point["memories"] == 200
    assert point["end_to_end_ms"]["n"] == 20
    assert result["serve"]["200"]["idle_rss_mb"] > 0


def test_proxy(speed_runs: dict[str, BenchRun]) -> None:
    result = speed_runs["proxy"].result()
    assert result["non_streaming"]["errors"] == 0
    assert result["streaming"]["errors"] == 0
    assert set(result["throughput"]) == {"1", "4"}
    assert result["throughput"]["4"]["tap"]["errors"] == 0


def test_load(tmp_path: Path) -> None:
    result = run_bench("load", tmp_path / "load.json", "--quick")
    assert set(result["levels"]) == {"1", "4"} and set(result["bursts"]) == {"4"}
    for entry in (*result["levels"].values(), *result["bursts"].values()):
        assert entry["tap"]["errors"] == 0 and entry["direct"]["errors"] == 0
        assert "added_ttfb_p99_ms" in entry and "p99" in entry["tap"]["inter_chunk_gap_ms"]
    assert result["levels"]["1"]["tap"]["share_with_memories"] > 0
    assert result["levels"]["4"]["tap"]["event_loop_lag_ms"]["samples"] > 0
    assert "TTFB p50/p99" not in (tmp_path / "load.log").read_text()  # its progress lines: only on a terminal


def test_consolidate(tmp_path: Path) -> None:
    result = run_bench("consolidate", tmp_path / "consolidate.json", "--quick")
    assert result["simulation"]["people"] == 3 and result["simulation"]["restated_or_repeated_turns"] > 0
    assert list(result["arms"]) == ["before", "after", "after+excerpts", "background"]
    before, after = result["arms"]["before"], result["arms"]["after"]
    # repeated turns are mostly stored once as they come in (tap.near_duplicate); consolidation
    # merges what is left, keeping every record (a merge adds one)
    assert after["near_duplicates_left"] == 0
    assert after["store"]["records"] >= before["store"]["records"]
    assert result["arms"]["after+excerpts"]["store"]["archived_excerpts"] > 0
    assert set(result["verdicts"]) == {"after", "after+excerpts", "background"}
    assert ": done" not in (tmp_path / "consolidate.log").read_text()  # progress only on a terminal


def test_write_stall(tmp_path: Path) -> None:
    result = run_bench("write_stall", tmp_path / "write_stall.json", "--quick")
    writes = result["writes"]
    assert {"add_1", "add_20", "access_flush_200_one_write", "access_flush_200_paced"} <= set(writes)
    assert {"archive_50_one_write", "archive_50_paced", "delete_500_one_write", "delete_500_batched"} <= set(writes)
    assert all(w["longest_pause_ms"] > 0 and w["seconds"] > 0 for w in writes.values())


def test_contention(tmp_path: Path) -> None:
    result = run_bench("contention", tmp_path / "contention.json", "--quick")
    assert result["store"]["memories"] == 300 and result["switch_interval_s"] > 0
    assert set(result["results"]) == {"large/full", "large/bm25_only", "small/full", "small/bm25_only"}
    for entry in result["results"].values():
        assert entry["idle"]["wall_ms"]["n"] == 5 and entry["busy"]["wall_ms"]["n"] == 5
        assert entry["busy_over_idle_wall"]["p50"] > 0


def test_soak(tmp_path: Path) -> None:
    result = run_bench("soak", tmp_path / "soak.json", "--quick")
    assert result["acknowledged_turns"] > 0 and result["acknowledged_turns_lost"] == 0
    assert result["upstream_requests_cancelled"] == result["upstream_requests_seen"] > 0
    assert result["verdict"]["answering"] and result["rss_mb"]["end"] > 0


def test_mcp(tmp_path: Path) -> None:
    result = run_bench("mcp", tmp_path / "mcp.json", "--quick")
    assert result["http"]["search_ms"]["n"] == 8 and result["in_process"]["tool_ms"]["n"] == 8
    assert result["stdio_with_server"]["start_ms"]["n"] == 1 and result["verdict"]["server_side_p50_ms"] > 0
