"""`tap serve` as a real process: private files, a clear line when the port is taken, dead letters
requeued through the running server, and the scope rule spelled out in `tap status`."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from tap.cli.main import main
from tap.ingest.chunker import Turn
from tap.ingest.queue import ChunkQueue
from testkit.serve_process import ServeProcess

pytestmark = pytest.mark.slow


@pytest.fixture
def served(isolated_home: Path, tmp_path: Path) -> Iterator[ServeProcess]:
    config = tmp_path / "config.toml"
    config.write_text("[proxy]\nscope_by_api_key = true\n")
    (isolated_home / "turnlog.db").touch(mode=0o644)  # left open by an older version
    os.chmod(isolated_home, 0o755)
    server = ServeProcess(isolated_home, config=config).start()
    yield server
    server.stop()


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_data_dir_is_private(served: ServeProcess, isolated_home: Path) -> None:
    request = urllib.request.Request(
        served.url + "/tap/ingest",
        data=json.dumps(
            {
                "scope": "ann",
                "conversation": "c1",
                "source": "hook",
                "messages": [{"role": "user", "content": "I live in Porto.", "id": "t1"}],
            }
        ).encode(),
        headers={"Authorization": f"Bearer {served.token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 202
    assert mode(isolated_home) == 0o700
    files = [p for p in isolated_home.iterdir() if p.is_file()]
    files += [p for p in (isolated_home / "chroma").rglob("*") if p.is_file()]
    names = {p.name for p in files}
    assert {"admin-token", "turnlog.db", "queue.db", "chroma.sqlite3"} <= names
    assert {p.name: oct(mode(p)) for p in files if mode(p) != 0o600} == {}
    assert all(mode(p) == 0o700 for p in (isolated_home / "chroma").rglob("*") if p.is_dir())


def test_a_port_in_use_is_one_line_saying_what_to_do(isolated_home: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "tap", "serve", "--port", str(port)],
            env={**os.environ, "TAP_HOME": str(isolated_home)},
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    line = next(line for line in result.stderr.splitlines() if line.startswith("tap: cannot listen"))
    assert f"127.0.0.1:{port}" in line and "already in use" in line and "--port" in line


def test_dead_letters_are_requeued_through_the_running_server(served: ServeProcess, isolated_home: Path) -> None:
    queue = ChunkQueue(isolated_home / "queue.db")  # a second connection, as `tap status` opens one
    turns = [Turn(id="t-dead", role="user", speaker="User", text="I keep bees in Sintra.")]
    queue.add_turns("ann", "dead-conversation", "hook", turns)
    queue.flush()
    claimed = queue.claim()
    assert claimed is not None
    queue.kill(claimed.chunk.id, "ProviderError: invalid x-api-key")
    result = CliRunner().invoke(main, ["extract", "retry"], catch_exceptions=False)
    assert result.exit_code == 0 and result.stdout.strip() == "requeued 1 chunk"
    assert queue.counts()["dead"] == 0
    queue.close()


def test_status_spells_out_the_anonymous_scope(served: ServeProcess) -> None:
    result = CliRunner().invoke(main, ["status"], catch_exceptions=False)
    assert result.exit_code == 0
    assert "scopes: each API key has its own scope" in result.stdout
    assert "clients that send no API key all share the scope 'anonymous'" in result.stdout
