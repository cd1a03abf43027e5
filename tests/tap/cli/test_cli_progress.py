"""Long CLI work shows a progress bar on a terminal (import, export, extraction, consolidation) and
stays quiet with --json or when stderr is not a terminal; import in batches numbers bad lines as
in the file."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tap.cli.main import main
from testkit.serve_process import ServeProcess
from tests.terminal import with_terminal_stderr


def export_file(path: Path, count: int, bad_line: int) -> None:
    lines = []
    for n in range(1, count + 1):
        record = {"id": f"m_import{n:05d}", "scope": "bulk", "content": f"Imported fact number {n} about gardens"}
        lines.append("{not json" if n == bad_line else json.dumps(record))
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.slow
def test_import_shows_a_bar_on_a_terminal_and_numbers_bad_lines_across_batches(
    isolated_home: Path, tmp_path: Path
) -> None:
    source = tmp_path / "export.jsonl"
    export_file(source, 620, bad_line=555)  # two batches of 500 lines: the bad one is in the second
    code, out, terminal = with_terminal_stderr(["memories", "import", str(source)], isolated_home)
    assert code == 1, terminal
    assert "imported 619, already present 0, rejected 1" in out
    assert "importing" in terminal and f"{source}:555:" in terminal

    code, out, terminal = with_terminal_stderr(["memories", "import", str(source), "--json"], isolated_home)
    assert json.loads(out)["unchanged"] == 619 and json.loads(out)["errors"][0][0] == 555
    assert "importing" not in terminal  # --json: no bar, only the rejected line


@pytest.mark.slow
def test_export_shows_a_bar_on_a_terminal_and_nothing_in_a_pipe(isolated_home: Path, tmp_path: Path) -> None:
    source = tmp_path / "export.jsonl"
    export_file(source, 30, bad_line=0)
    assert CliRunner().invoke(main, ["memories", "import", str(source)]).exit_code == 0
    code, _, terminal = with_terminal_stderr(["memories", "export", "-o", str(tmp_path / "out.jsonl")], isolated_home)
    assert code == 0 and "exporting" in terminal and "30/30" in terminal
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 30
    piped = CliRunner().invoke(main, ["memories", "export", "-o", str(tmp_path / "again.jsonl")])
    assert piped.exit_code == 0 and piped.stderr == f"exported 30 records to {tmp_path / 'again.jsonl'}\n"


@pytest.mark.slow
def test_extract_run_shows_a_bar_only_on_a_terminal(isolated_home: Path) -> None:
    code, _, terminal = with_terminal_stderr(["extract", "run"], isolated_home)
    assert code == 0 and "extracting" in terminal
    code, out, terminal = with_terminal_stderr(["extract", "run", "--json"], isolated_home)
    assert code == 0 and "extracting" not in terminal and json.loads(out)["processed"] == 0


def seed_duplicates(home: Path, scopes: list[str]) -> None:
    """Two memories that say the same thing in each scope (on disk, for the CLI to read)."""
    from tap.config import LoadedConfig, parse_config
    from tap.records import Memory
    from tap.wiring.runtime import configured_adapters, open_runtime

    rt = open_runtime(LoadedConfig(config=parse_config(""), path=None, data_dir=home), adapters=configured_adapters)
    try:
        rt.memories.write(
            [
                Memory(id=f"m_{scope}{n}", scope=scope, content=content, sources=[f"t_{scope}{n}"])
                for scope in scopes
                for n, content in enumerate(("The user lives in Lisbon", "The user lives in Lisbon!"))
            ]
        )
    finally:
        rt.close()


@pytest.mark.slow
def test_consolidate_shows_progress_on_a_terminal_here_and_through_the_server(isolated_home: Path) -> None:
    seed_duplicates(isolated_home, ["ann", "bob"])
    code, out, terminal = with_terminal_stderr(["memories", "consolidate", "--dry-run", "--json"], isolated_home)
    assert code == 0 and json.loads(out)["merged"] == 4 and "consolidating" not in terminal
    code, out, terminal = with_terminal_stderr(["memories", "consolidate"], isolated_home)
    assert code == 0 and "merged 4 memories into 2, archived 0 (2 scopes)" in out
    assert "consolidating scopes" in terminal and "2/2" in terminal  # scope by scope, here

    server = ServeProcess(isolated_home).start()
    try:
        code, out, terminal = with_terminal_stderr(["memories", "consolidate", "--scope", "ann"], isolated_home)
        assert code == 0 and "merged 0 memories into 0, archived 0 (1 scope)" in out
        assert "consolidating (tap serve)" in terminal  # the server answers when done: a spinner and the time
        code, out, terminal = with_terminal_stderr(["memories", "consolidate", "--json"], isolated_home)
        assert code == 0 and json.loads(out)["scopes"] == 2 and "consolidating" not in terminal
    finally:
        server.stop()


def test_benchmark_progress_is_quiet_off_a_terminal(capsys: object) -> None:
    sys.path.insert(0, str(Path(__file__).parents[3] / "bench"))
    try:
        import benchutil
    finally:
        sys.path.pop(0)
    benchutil.note("step 1 of 3")
    with benchutil.Bar("writing", total=3) as bar:
        bar.advance(3)
        assert not bar.active
    assert capsys.readouterr().err == ""  # type: ignore[attr-defined]
