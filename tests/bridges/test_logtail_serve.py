"""Log-tail with a real `tap serve`: `tap ingest` through its HTTP API, and `[logtail]` inside serve."""

from __future__ import annotations

import json
import signal
import sqlite3
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tap.cli.main import main
from testkit.serve_process import ServeProcess
from testkit.waits import wait_until
from tests.bridges.transcripts import CWD, EXPECTED, SESSION, claude_session_entries, jsonl_line, write_claude_session

pytestmark = pytest.mark.slow


def memories(server: ServeProcess, scope: str) -> list[dict[str, Any]]:
    url = f"{server.url}/tap/memories?{urllib.parse.urlencode({'scope': scope, 'limit': 200})}"
    req = urllib.request.Request(url)
    req.add_header("Authorization", f"Bearer {server.token}")
    with urllib.request.urlopen(req, timeout=10) as resp:
        return list(json.loads(resp.read())["memories"])


def seen_turns(home: Path) -> list[str]:
    with sqlite3.connect(home / "queue.db") as db:
        return sorted(row[0] for row in db.execute("SELECT turn_id FROM seen"))


def test_ingest_goes_through_the_running_server(tmp_path: Path, isolated_home: Path) -> None:
    config = tmp_path / "tap.toml"
    config.write_text("[extract]\nflush_after_s = 0.0\n", encoding="utf-8")
    projects = tmp_path / "projects"
    write_claude_session(projects)
    server = ServeProcess(isolated_home, config=config).start()
    try:
        result = CliRunner().invoke(main, ["--config", str(config), "ingest", str(projects), "--json"])
        assert result.exit_code == 0, result.stderr
        summary = json.loads(result.stdout)
        assert summary["server"] == server.url and summary["turns"] == len(EXPECTED)
        assert summary["memories_written"] is None and summary["chunks"] is None
        wait_until(lambda: any("Postgres" in m["content"] for m in memories(server, CWD)), what="the Postgres memory")
        again = json.loads(
            CliRunner().invoke(main, ["--config", str(config), "ingest", str(projects), "--json"]).stdout
        )
        assert again["turns"] == 0 and again["lines"] == 0
        assert {m["source"] for m in memories(server, CWD)} == {"logtail"}
    finally:
        server.stop()


def test_serve_follows_the_configured_paths(tmp_path: Path, isolated_home: Path) -> None:
    projects = tmp_path / "claude" / "projects"
    path = projects / "-home-ana-projects-billing" / f"{SESSION}.jsonl"
    path.parent.mkdir(parents=True)
    entries = [jsonl_line(e) for e in claude_session_entries()]
    path.write_text("".join(entries[:20]), encoding="utf-8")
    config = tmp_path / "tap.toml"
    config.write_text(
        f'[logtail]\nenabled = true\npaths = ["{projects}", "{tmp_path / "not-yet"}"]\npoll_s = 0.2\n\n'
        "[extract]\nflush_after_s = 0.0\n",
        encoding="utf-8",
    )
    server = ServeProcess(isolated_home, config=config).start()
    try:
        wait_until(lambda: len(seen_turns(isolated_home)) == 4, what="the first four turns queued")
        with path.open("a", encoding="utf-8") as handle:
            handle.write("".join(entries[20:]))
        wait_until(lambda: seen_turns(isolated_home) == sorted(e[0] for e in EXPECTED), what="every turn queued")
        wait_until(lambda: any("June 30" in m["content"] for m in memories(server, CWD)), what="the June 30 memory")
    finally:
        output = server.stop()  # SIGTERM; killed, without "tap: stopped", if it has not exited in 30 s
    assert "logtail: following" in output and "tap: stopped" in output
    assert f"{tmp_path / 'not-yet'}: no such file or directory" in output


def test_follow_waits_for_a_restarted_server_and_loses_nothing(tmp_path: Path, isolated_home: Path) -> None:
    """`tap ingest --follow` sending to a `tap serve` that restarts (on another port): it says once
    that it waits, goes on when the server is back, and every turn is queued once."""
    from tests.bridges.test_logtail_cli import count_seen, read_through, tap_process

    config = tmp_path / "tap.toml"
    config.write_text("[logtail]\npoll_s = 0.2\n\n[extract]\nflush_after_s = 0.0\n", encoding="utf-8")
    projects = tmp_path / "projects"
    path = projects / "-home-ana-projects-billing" / f"{SESSION}.jsonl"
    path.parent.mkdir(parents=True)
    entries = [jsonl_line(e) for e in claude_session_entries()]
    path.write_text("".join(entries[:8]), encoding="utf-8")
    server = ServeProcess(isolated_home, config=config).start()
    proc = tap_process(isolated_home, config, "ingest", str(projects), "--follow", "--json")
    try:
        # queued, and the answer back at the follower (its offset moves only then): a server stopped
        # between the two leaves the follower to send them again, and the summary would not count
        # turns the first server queued
        wait_until(
            lambda: count_seen(isolated_home) == 2 and read_through(isolated_home, path),
            what="the first two turns queued through the server and acknowledged",
        )
        first_url = server.url
        server.stop()
        with path.open("a", encoding="utf-8") as handle:
            handle.write("".join(entries[8:20]))  # written while no server answers
        time.sleep(2.0)  # several polls, each failing, while it waits
        server.start()
        assert server.url != first_url  # port 0: the restarted server listens elsewhere
        with path.open("a", encoding="utf-8") as handle:
            handle.write("".join(entries[20:]))
        wait_until(
            lambda: seen_turns(isolated_home) == sorted(e[0] for e in EXPECTED) and read_through(isolated_home, path),
            what="every turn queued and acknowledged",  # Ctrl-C before the answer: the run never learns of them
        )
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
        server.stop()
    assert proc.returncode == 0, err
    assert err.count("is not answering") == 1 and f"tap serve answers at {server.url}" in err
    summary = json.loads(out)
    assert summary["turns"] == len(EXPECTED) and summary["server"] == server.url  # each turn queued once
