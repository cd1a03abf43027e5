"""The Benchmarks page's plots and tables are what bench/plots.py draws from bench/results now, and
bench/results holds nothing that no plot or table reads (besides the history of earlier runs)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_plots():
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        spec = importlib.util.spec_from_file_location("bench_plots", ROOT / "bench" / "plots.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(ROOT / "bench"))


def test_committed_plots_and_tables_match_the_results(tmp_path: Path) -> None:
    plots = load_plots()
    results = plots.Results()
    written = plots.render(tmp_path, results)
    stale = [
        str(path.relative_to(tmp_path))
        for path in written
        if path.read_bytes() != (plots.OUT / path.relative_to(tmp_path)).read_bytes()
    ]
    assert stale == [], "run ./dev bench plots and commit docs/benchmarks"
    assert results.unread() == [], "bench/results holds files no plot or table reads"
    extra = {p.name for p in (plots.OUT / "tables").iterdir()} - {p.name for p in (tmp_path / "tables").iterdir()}
    assert extra == set(), "docs/benchmarks/tables holds tables bench/plots.py no longer writes"


def test_the_benchmarks_page_shows_every_plot_and_table() -> None:
    page = (ROOT / "docs" / "benchmarks" / "index.md").read_text(encoding="utf-8")
    for path in sorted((ROOT / "docs" / "benchmarks").glob("*.svg")):
        assert f"]({path.name})" in page, path.name
    for path in sorted((ROOT / "docs" / "benchmarks" / "tables").glob("*.md")):
        assert f'--8<-- "tables/{path.name}"' in page, path.name


def test_results_hold_one_current_file_per_benchmark_and_the_history() -> None:
    files = {p.name for p in (ROOT / "bench" / "results").iterdir()}
    assert "history.jsonl" in files
    assert all(name.endswith(".json") for name in files - {"history.jsonl"})
