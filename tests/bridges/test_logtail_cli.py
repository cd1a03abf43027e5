"""`tap ingest` as a user runs it: CliRunner on `tap.cli.main`, and real processes (`--follow`, kill -9)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tap.cli.main import main
from tap.extract.worker import ExtractionWorker
from testkit.waits import wait_until
from tests.bridges.transcripts import (
    CWD,
    EXPECTED,
    SESSION,
    Clock,
    assistant,
    claude_session_entries,
    jsonl_line,
    text,
    user,
    write_claude_session,
)
from tests.terminal import with_terminal_stderr

BO_CWD = "/home/bo/garden"
BO_SESSION = "9d3f7a52-1b6e-4c0a-8f21-5e4d3c2b1a09"


def bo_entries(start: int, count: int, parent: str | None = None) -> list[dict[str, Any]]:
    """A second project: Bo's garden, `count` user/assistant exchanges from number `start`."""
    at = Clock()
    entries = []
    for i in range(start, start + count):
        entries.append(user(f"bo-u{i}", parent, f"I decided to plant {i + 2} apple trees along the north fence.", at))
        entries.append(assistant(f"bo-a{i}", f"bo-u{i}", f"msg_bo{i}", text(f"Planting plan {i} noted."), at))
        parent = f"bo-a{i}"
    for entry in entries:
        entry["cwd"], entry["sessionId"] = BO_CWD, BO_SESSION
    return entries


def write_projects(root: Path) -> Path:
    projects = root / "projects"
    write_claude_session(projects)
    bo = projects / "-home-bo-garden" / f"{BO_SESSION}.jsonl"
    bo.parent.mkdir(parents=True)
    bo.write_text("".join(jsonl_line(e) for e in bo_entries(0, 3)), encoding="utf-8")
    return projects


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def seen_turns(home: Path) -> list[str]:
    with sqlite3.connect(home / "queue.db") as db:
        return sorted(row[0] for row in db.execute("SELECT turn_id FROM seen"))


def test_backfill_writes_memories_per_project_and_a_second_run_adds_nothing(tmp_path: Path) -> None:
    projects = write_projects(tmp_path)
    code, out, err = run("ingest", str(projects), "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["files"] == 3 and summary["formats"] == {"claude-code": 3}
    assert summary["turns"] == len(EXPECTED) + 6 and summary["errors"] == [] and summary["skipped"] == {}
    assert summary["server"] is None and summary["memories_written"] >= 4 and summary["chunks"] >= 2
    code, out, _ = run("memories", "list", "--scope", CWD, "--json")
    ana = json.loads(out)
    assert ana and {m["source"] for m in ana} == {"logtail"} and {m["conversation"] for m in ana} == {SESSION}
    assert any("Postgres" in m["content"] for m in ana)
    assert {s for m in ana for s in m["sources"]} <= {e[0] for e in EXPECTED}
    code, out, _ = run("memories", "list", "--scope", BO_CWD, "--json")
    assert any("apple trees" in m["content"] for m in json.loads(out))
    code, out, _ = run("ingest", str(projects), "--json")
    again = json.loads(out)
    assert code == 0 and again["turns"] == 0 and again["lines"] == 0 and again["memories_written"] == 0


def test_human_summary_warns_about_broken_lines_and_counts_them(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "tea.jsonl").write_text(
        '{"role": "user", "content": "I prefer green tea in the morning."}\n{"role": \n'
        '{"role": "assistant", "content": "Green tea it is."}\n',
        encoding="utf-8",
    )
    (logs / "porto.txt").write_text(
        "User: I moved to Porto in March.\nAssistant: Welcome to Porto!\n", encoding="utf-8"
    )
    (logs / "server.log").write_text("2024-01-01 12:00:00 INFO server started\n", encoding="utf-8")
    code, out, err = run("ingest", str(logs), "--scope", "me")
    assert code == 0
    assert f"{logs / 'tea.jsonl'}:2: broken JSON; line skipped" in err
    assert f"{logs / 'server.log'}: not a chat log tap recognises (first line: '2024-01-01 12:00:00 INFO" in err
    assert f"not a chat log (skipped; looked at again when it grows, or give --format): {logs / 'server.log'}" in out
    assert "files: 3 (jsonl 1, text 1)" in out and "new turns queued: 4" in out
    assert "skipped lines: 1 (broken JSON: 1)" in out and "memories written:" in out
    code, out, _ = run("memories", "search", "tea", "--scope", "me", "--json")
    assert any("green tea" in r["memory"]["content"] for r in json.loads(out))


def test_files_deleted_since_the_last_run_are_no_longer_tracked(tmp_path: Path, isolated_home: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    for name in ("porto.txt", "braga.txt"):
        (logs / name).write_text(f"User: I visited {name[:-4]} in May.\nAssistant: Lovely.\n", encoding="utf-8")
    code, out, _ = run("ingest", str(logs), "--scope", "me", "--json")
    assert code == 0 and json.loads(out)["forgotten"] == 0
    (logs / "porto.txt").unlink()
    code, out, _ = run("ingest", str(logs), "--scope", "me")
    assert code == 0 and "files gone since the last run, no longer tracked: 1" in out
    with sqlite3.connect(isolated_home / "logtail.db") as db:
        assert [row[0] for row in db.execute("SELECT path FROM files")] == [str(logs / "braga.txt")]


def test_unreadable_paths_are_named_and_exit_1(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "ok.txt").write_text("User: My bike is a green Brompton.\nAssistant: Nice bike.\n", encoding="utf-8")
    (logs / "dangling.log").symlink_to(tmp_path / "deleted.log")
    unreadable = [str(logs / "dangling.log"), str(tmp_path / "no-such-dir")]
    if os.geteuid() != 0:  # as root, permissions do not stop reading
        locked = logs / "locked.txt"
        locked.write_text("User: secret\n", encoding="utf-8")
        locked.chmod(0)
        unreadable.append(str(locked))
    code, out, err = run("ingest", str(logs), str(tmp_path / "no-such-dir"), "--json")
    assert code == 1
    summary = json.loads(out)
    assert sorted(e["path"] for e in summary["errors"]) == sorted(unreadable)
    assert summary["turns"] == 2
    for path in unreadable:
        assert f"cannot read {path}" in err


def test_format_option_overrides_detection(tmp_path: Path) -> None:
    path = tmp_path / "odd.log"
    path.write_text("random header line\nUser: I live in Oslo.\n", encoding="utf-8")
    code, out, _ = run("ingest", str(path), "--format", "jsonl", "--json")
    assert code == 0 and json.loads(out)["skipped"] == {"broken JSON": 2}


def test_ctrl_c_during_an_extraction_still_extracts_that_chunk(
    tmp_path: Path, isolated_home: Path, fast_config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    projects = write_projects(tmp_path)
    extracted: list[str] = []
    process = ExtractionWorker._process

    def ctrl_c_in_the_first(worker: ExtractionWorker, extraction: Any, item: Any) -> str | None:
        extracted.append(item.chunk.id)
        if len(extracted) == 1:
            raise KeyboardInterrupt  # Ctrl-C while the first chunk is being extracted
        return process(worker, extraction, item)

    monkeypatch.setattr(ExtractionWorker, "_process", ctrl_c_in_the_first)
    code, out, err = run("--config", str(fast_config), "ingest", str(projects), "--follow", "--json")
    assert code == 0, err
    assert "stopping; extracting what was read" in err and json.loads(out)["memories_written"] > 0
    assert extracted.count(extracted[0]) == 2  # cut short, then extracted before the command ended
    with sqlite3.connect(isolated_home / "queue.db") as db:
        assert {state for (state,) in db.execute("SELECT state FROM chunks")} == {"done"}


# -- real processes ---------------------------------------------------------------------------------


def tap_process(home: Path, config: Path, *args: str) -> subprocess.Popen[str]:
    """`tap ARGS` in a real process that takes SIGINT as a terminal's Ctrl-C: a test run started in
    the background of a script inherits SIGINT ignored, and Python then never raises
    KeyboardInterrupt, so its default handling is restored in the child first."""
    env = {**os.environ, "TAP_HOME": str(home)}
    return subprocess.Popen(
        [sys.executable, "-m", "tap", "--config", str(config), *args],
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_default_sigint,
    )


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def count_seen(home: Path) -> int:
    """How many turns the queue has seen (0 before the process created queue.db)."""
    try:
        return len(seen_turns(home))
    except sqlite3.OperationalError:
        return 0


def read_through(home: Path, path: Path) -> bool:
    """The tailer has read the whole file and handed every turn in it to ingestion: its committed
    offset is the file's size, at the size and mtime it last looked at (tap.logtail.state)."""
    status = path.stat()
    try:
        with sqlite3.connect(home / "logtail.db") as db:
            row = db.execute("SELECT offset, seen_size, seen_mtime FROM files WHERE path = ?", (str(path),)).fetchone()
    except sqlite3.OperationalError:
        return False  # logtail.db not created yet
    return row is not None and tuple(row) == (status.st_size, status.st_size, status.st_mtime_ns)


def extracted(home: Path) -> bool:
    """Every queued turn is extracted: no turn waits in an open window, no chunk is queued or being
    extracted (read from queue.db as `tap status` counts them; tap.ingest.queue.ChunkQueue.counts)."""
    with sqlite3.connect(home / "queue.db") as db:
        (busy,) = db.execute("SELECT count(*) FROM chunks WHERE state IN ('queued', 'running')").fetchone()
        (waiting,) = db.execute(
            "SELECT coalesce(sum(max(0, json_array_length(CAST(turns AS TEXT)) - covered)), 0) FROM windows"
        ).fetchone()
    return busy == 0 and waiting == 0


@pytest.fixture
def fast_config(tmp_path: Path) -> Path:
    config = tmp_path / "tap.toml"
    config.write_text("[logtail]\npoll_s = 0.2\n\n[extract]\nflush_after_s = 0.0\n", encoding="utf-8")
    return config


@pytest.mark.slow
def test_one_shot_in_a_real_process(tmp_path: Path, isolated_home: Path, fast_config: Path) -> None:
    projects = write_projects(tmp_path)
    proc = tap_process(isolated_home, fast_config, "ingest", str(projects / "*" / "*.jsonl"), "--json")
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err
    summary = json.loads(out)
    assert summary["files"] == 2 and summary["turns"] == len(EXPECTED) + 6 and summary["memories_written"] > 0
    assert "\x1b[" not in err  # no progress bar when stderr is not a terminal


@pytest.mark.slow
def test_one_shot_shows_its_bar_on_a_terminal(tmp_path: Path, isolated_home: Path, fast_config: Path) -> None:
    projects = write_projects(tmp_path)
    code, out, terminal = with_terminal_stderr(["--config", str(fast_config), "ingest", str(projects)], isolated_home)
    assert code == 0 and f"new turns queued: {len(EXPECTED) + 6}" in out
    assert "reading logs" in terminal and "3/3" in terminal and "turns queued" in terminal
    assert "extracting memories" in terminal and "\x1b[" in terminal  # drawn, with the terminal's escapes


@pytest.mark.slow
def test_follow_picks_up_appends_and_new_files_then_stops_on_ctrl_c(
    tmp_path: Path, isolated_home: Path, fast_config: Path
) -> None:
    projects = write_projects(tmp_path)
    proc = tap_process(isolated_home, fast_config, "ingest", str(projects), "--follow", "--json")
    try:
        wait_until(lambda: count_seen(isolated_home) == len(EXPECTED) + 6, what="the first turns queued")
        with (projects / "-home-bo-garden" / f"{BO_SESSION}.jsonl").open("a", encoding="utf-8") as handle:
            handle.write("".join(jsonl_line(e) for e in bo_entries(3, 2, parent="bo-a2")))
        late = projects / "-home-cy-notes" / "c0ffee00-0000-4000-8000-000000000001.jsonl"
        late.parent.mkdir()
        late.write_text("".join(jsonl_line({**e, "cwd": "/home/cy/notes"}) for e in bo_entries(50, 1)), "utf-8")
        wait_until(lambda: count_seen(isolated_home) == len(EXPECTED) + 12, what="the appended turns queued")
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    summary = json.loads(out)
    assert summary["turns"] == len(EXPECTED) + 12 and summary["memories_written"] > 0 and summary["files"] == 4
    assert "bo-u3" in seen_turns(isolated_home) and "bo-u50" in seen_turns(isolated_home)


@pytest.mark.slow
def test_kill_9_and_restart_loses_nothing_and_doubles_nothing(
    tmp_path: Path, isolated_home: Path, fast_config: Path
) -> None:
    projects = tmp_path / "projects"
    path = projects / "-home-ana-projects-billing" / f"{SESSION}.jsonl"
    path.parent.mkdir(parents=True)
    entries = [jsonl_line(e) for e in claude_session_entries()]
    path.write_text("".join(entries[:8]), encoding="utf-8")
    proc = tap_process(isolated_home, fast_config, "ingest", str(projects), "--follow", "--json")
    try:
        wait_until(lambda: count_seen(isolated_home) == 2, what="the first two turns queued")
        with path.open("a", encoding="utf-8") as handle:
            for line in entries[8:20]:
                handle.write(line)
                handle.flush()
                time.sleep(0.03)  # a writer appending line by line, so the kill lands mid-stream (not a wait)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    with path.open("a", encoding="utf-8") as handle:
        handle.write("".join(entries[20:]))
    proc = tap_process(isolated_home, fast_config, "ingest", str(projects), "--follow", "--json")
    try:
        wait_until(
            lambda: read_through(isolated_home, path) and extracted(isolated_home),
            what="the whole file read and its turns extracted",
        )
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert seen_turns(isolated_home) == sorted(e[0] for e in EXPECTED)
    code, out, _ = run("--config", str(fast_config), "ingest", str(projects), "--json")
    again = json.loads(out)
    assert code == 0 and again["turns"] == 0 and again["memories_written"] == 0
    code, out, _ = run("--config", str(fast_config), "memories", "list", "--scope", CWD, "--json")
    memories = json.loads(out)
    assert len({m["id"] for m in memories}) == len(memories) and memories
