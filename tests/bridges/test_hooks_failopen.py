"""`tap hook` fails open: whatever goes wrong, exit 0 in time, nothing on stdout, one line in tap.log.

Each case runs the installed `tap` script as an agent does (a subprocess with the payload on stdin).
The servers here are real loopback HTTP servers that misbehave on purpose (down, slow, refusing).
"""

from __future__ import annotations

import http.server
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bridges.hooks.hooklog import log_path
from store.lock import DataDirLock
from tap.admin_token import ensure_token
from tests.bridges.hooks_fixtures import HookRun, payload, run_hook

pytestmark = pytest.mark.slow  # starts other processes (see pyproject.toml: markers)

PROMPT = payload("UserPromptSubmit", "s-fail", "/tmp/nowhere", None, prompt="what do we deploy on?")
STARTUP_SLACK_S = 0.8  # Python start-up and imports before the deadline starts, on a busy 2-core machine


def log_lines(home: Path) -> list[str]:
    path = log_path(home)
    return path.read_text().splitlines() if path.exists() else []


def pretend_server(home: Path, url: str) -> None:
    """A server record whose process is alive (this test's), pointing at `url`."""
    ensure_token(home)
    (home / "server.json").write_text(json.dumps({"url": url, "pid": os.getpid()}))


class Misbehaving(http.server.ThreadingHTTPServer):
    """Answers every request after `delay` seconds with `status` (and a hook answer when 200)."""

    daemon_threads = True

    def __init__(self, delay: float, status: int) -> None:
        self.delay, self.status = delay, status
        self.requests: list[str] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                server.requests.append(self.path)
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                time.sleep(server.delay)
                body = b'{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "late"}}'
                self.send_response(server.status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@pytest.fixture
def misbehaving(request: pytest.FixtureRequest) -> Iterator[Misbehaving]:
    delay, status = request.param
    server = Misbehaving(delay, status)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def assert_failed_open(run: HookRun, home: Path, *expected: str) -> None:
    assert run.returncode == 0 and run.stdout == b"", run
    lines = log_lines(home)
    assert len(lines) == 1, lines
    assert all(text in lines[0] for text in expected), lines[0]


def test_server_down(isolated_home: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]  # nothing listens here once the socket closes
    pretend_server(isolated_home, f"http://127.0.0.1:{closed}")
    run = run_hook("user-prompt-submit", PROMPT, home=isolated_home)
    assert_failed_open(run, isolated_home, "UserPromptSubmit", "session s-fail", "did not answer", "no output")
    assert run.seconds < 1.0 + STARTUP_SLACK_S


@pytest.mark.parametrize("misbehaving", [(5.0, 200)], indirect=True)
def test_slow_server_is_given_up_at_the_timeout(isolated_home: Path, misbehaving: Misbehaving, tmp_path: Path) -> None:
    pretend_server(isolated_home, misbehaving.url)
    run = run_hook("user-prompt-submit", PROMPT, home=isolated_home)
    assert_failed_open(run, isolated_home, "no answer within 1 s")
    assert 1.0 <= run.seconds < 1.0 + STARTUP_SLACK_S
    assert misbehaving.requests == ["/tap/hooks/user-prompt-submit?agent=claude"]
    config = tmp_path / "fast.toml"
    config.write_text("[hooks]\ntimeout_s = 0.3\n")
    quick = run_hook("user-prompt-submit", PROMPT, home=isolated_home, config=config)
    assert quick.returncode == 0 and quick.stdout == b"" and quick.seconds < 0.3 + STARTUP_SLACK_S
    assert "no answer within 0.3 s" in log_lines(isolated_home)[-1]


@pytest.mark.parametrize("misbehaving", [(0.0, 401), (0.0, 500)], indirect=True)
def test_server_refusing_the_event(isolated_home: Path, misbehaving: Misbehaving) -> None:
    pretend_server(isolated_home, misbehaving.url)
    run = run_hook("user-prompt-submit", PROMPT, home=isolated_home)
    assert_failed_open(run, isolated_home, f"answered {misbehaving.status}")


def test_embedded_store_busy(isolated_home: Path) -> None:
    lock = DataDirLock(isolated_home)
    lock.acquire()  # another tap process holds the embedded store
    try:
        run = run_hook("user-prompt-submit", PROMPT, home=isolated_home)
    finally:
        lock.release()
    assert_failed_open(run, isolated_home, "in use by another tap process")


def test_embedded_deadline(isolated_home: Path, tmp_path: Path) -> None:
    config = tmp_path / "tight.toml"
    config.write_text("[hooks]\nembedded_timeout_s = 0.5\n")  # far less than opening the store takes
    run = run_hook("user-prompt-submit", PROMPT, home=isolated_home, config=config)
    assert_failed_open(run, isolated_home, "the embedded store: no answer within 0.5 s")
    assert run.seconds < 0.5 + STARTUP_SLACK_S


def test_garbage_input_and_unknown_events(isolated_home: Path) -> None:
    run = run_hook("stop", b"this is not json", home=isolated_home)
    assert_failed_open(run, isolated_home, "Stop", "not JSON")
    odd = run_hook("PostToolUse", PROMPT, home=isolated_home)
    assert odd.returncode == 0 and odd.stdout == b"" and b"unknown hook event" in odd.stderr
    assert "unknown hook event 'PostToolUse'" in log_lines(isolated_home)[-1]
