"""Smoke run of bench/longmemeval.py in its quick mode (two questions through a real `tap serve`), then
of bench/lexical_only.py on the data dir it kept.

The benchmark runs as a user would run it (``python bench/longmemeval.py --quick``, a subprocess)
and must exit 0 with a JSON result of the documented shape: per-type ER figures for tap and the
BM25 baseline in [0, 100], ingestion throughput, recall latency, per-question rows with their
diagnostics. The LongMemEval data (outside the repo) is optional: the test is skipped without it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(
    os.environ.get("TAP_LONGMEMEVAL_DATA", ROOT.parent / "shared" / "data" / "longmemeval" / "lme_s_dev.json.gz")
)
TIMEOUT_S = 300
REASONS = {"not-extracted", "superseded", "only-in-episode", "ranked-out", "not-retrieved"}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not DATA.is_file(), reason=f"LongMemEval data not found at {DATA} (set TAP_LONGMEMEVAL_DATA)"),
]


def _bench(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run bench/<script> as a user would (a subprocess); it must exit 0."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def test_quick_run_writes_the_documented_result(tmp_path: Path) -> None:
    out, home = tmp_path / "longmemeval.json", tmp_path / "home"
    proc = _bench("longmemeval.py", "--quick", "--data", str(DATA), "--out", str(out), "--home", str(home))
    assert "written to" in proc.stdout
    result = json.loads(out.read_text())
    assert result["benchmark"] == "longmemeval"
    assert result["mode"] == "quick"
    assert result["machine"]["cpus"]
    assert result["questions"]["selected"] == 2
    assert set(result["by_type"]) == {"single-session-user", "single-session-assistant"}

    for summary in [*result["by_type"].values(), result["all"]]:
        assert summary["with_evidence"] >= 1
        for system in ("tap", "bm25", "shuffled_citations"):
            for figure in ("er_frac", "er_all"):
                assert 0 <= summary[system][figure] <= 100, (system, figure, summary[system])
        misses = summary["misses"]
        assert set(misses["reasons"]) == REASONS
        assert sum(misses["reasons"].values()) == misses["missed"] <= misses["evidence_turns"]
        assert 0 < summary["blocks"]["mean_tokens"] <= result["budget_tokens"]

    ingestion = result["ingestion"]
    assert ingestion["turns_posted"] > 0 and ingestion["turns_per_s"] > 0
    assert ingestion["queue_at_end"]["queued"] == ingestion["queue_at_end"]["running"] == 0
    for kind in ("cold", "warm"):
        assert result["recall_latency"][kind]["server_ms"]["n"] == 2
        assert result["recall_latency"][kind]["server_ms"]["p50"] > 0

    rows = result["rows"]
    assert len(rows) == 2
    for row in rows:
        assert row["evidence"]
        assert set(row["tap_cited_evidence"]) <= set(row["evidence"])
        assert set(row["bm25_cited_evidence"]) <= set(row["evidence"])
        assert len(row["misses"]) == len(row["evidence"]) - len(row["tap_cited_evidence"])
        for miss in row["misses"]:
            assert miss["reason"] in REASONS
            assert miss["role"] in ("user", "assistant")
        assert row["store"]["memories"] > 0

    # bench/lexical_only.py on the home that run kept: the BM25-only fallback against the full recall
    lexical_out = tmp_path / "lexical-only.json"
    _bench(
        "lexical_only.py", "--skip-locomo", "--lme-home", str(home), "--lme-data", str(DATA), "--out", str(lexical_out)
    )
    lexical = json.loads(lexical_out.read_text())["longmemeval"]
    assert lexical["questions"] == 2
    assert lexical["hybrid"]["by_type"]["all"]["n"] == result["all"]["with_evidence"]
    for mode in ("hybrid", "lexical"):
        for figure in ("er_frac", "er_all"):
            assert 0 <= lexical[mode]["by_type"]["all"][figure] <= 100
    assert lexical["latency_ms"]["lexical"] > 0
