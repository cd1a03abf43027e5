"""`tap hook` fails open: whatever goes wrong, exit 0 at its deadline, nothing on stdout, one line
in tap.log.

Each case runs the installed `tap` script as an agent does (a subprocess with the payload on stdin).
The servers here are real loopback HTTP servers that misbehave on purpose (down, refusing, or
holding the answer until the test is over: a hook that exits while the server still holds it gave
up at its own deadline). Nothing here is timed: bench/hooks.py measures how long a hook takes.
"""

from __future__ import annotations

import http.server
import json
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from bridges.hooks.hooklog import log_path
from store.lock import DataDirLock
from tap.admin_token import ensure_token
from testkit.agent_hooks import HookRun, payload, run_hook
from testkit.waits import wait_until

pytestmark = pytest.mark.slow  # starts other processes (see pyproject.toml: markers)

PROMPT = payload("UserPromptSubmit", "s-fail", "/tmp/nowhere", None, prompt="what do we deploy on?")
HOLD_S = 120.0  # how long a holding server holds at most: only so that a broken test cannot hang


def log_lines(home: Path) -> list[str]:
    path = log_path(home)
    return path.read_text().splitlines() if path.exists() else []


def pretend_server(home: Path, url: str) -> None:
    """A server record whose process is alive (this test's), pointing at `url`."""
    ensure_token(home)
    (home / "server.json").write_text(json.dumps({"url": url, "pid": os.getpid()}))


class Misbehaving(http.server.ThreadingHTTPServer):
    """Answers every request with `status` (and a hook answer when 200); with `hold`, only once the
    test is over (`release`), so a hook that returned before then did not wait for the answer."""

    daemon_threads = True

    def __init__(self, hold: bool, status: int) -> None:
        self.hold, self.status = hold, status
        self.requests: list[str] = []
        self.answered = 0
        self.release = threading.Event()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                server.requests.append(self.path)
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if server.hold:
                    server.release.wait(HOLD_S)
                server.answered += 1
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
    hold, status = request.param
    server = Misbehaving(hold, status)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.release.set()
    server.shutdown()
    server.server_close()


def assert_failed_open(run: HookRun, home: Path, *expected: str) -> None:
    assert run.returncode == 0 and run.stdout == b"", run
    lines = wait_until(lambda: log_lines(home), what="the log line (Stop and SessionEnd log from a detached child)")
    assert len(lines) == 1, lines
    assert all(text in lines[0] for text in expected), lines[0]


def test_server_down(isolated_home: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]  # nothing listens here once the socket closes
    pretend_server(isolated_home, f"http://127.0.0.1:{closed}")
    run = run_hook("user-prompt-submit", PROMPT, home=isolated_home)
    assert_failed_open(run, isolated_home, "UserPromptSubmit", "session s-fail", "did not answer", "no output")


@pytest.mark.parametrize("misbehaving", [(True, 200)], indirect=True)
def test_slow_server_is_given_up_at_the_timeout(isolated_home: Path, misbehaving: Misbehaving, tmp_path: Path) -> None:
    pretend_server(isolated_home, misbehaving.url)
    run = run_hook("user-prompt-submit", PROMPT, home=isolated_home)
    assert_failed_open(run, isolated_home, "no answer within 1 s")  # [hooks] timeout_s, the default
    assert misbehaving.requests == ["/tap/hooks/user-prompt-submit?agent=claude"]
    assert misbehaving.answered == 0  # the hook gave up at its deadline, it did not wait for the answer
    config = tmp_path / "fast.toml"
    config.write_text("[hooks]\ntimeout_s = 0.3\n")
    quick = run_hook("user-prompt-submit", PROMPT, home=isolated_home, config=config)
    assert quick.returncode == 0 and quick.stdout == b"" and misbehaving.answered == 0
    assert "no answer within 0.3 s" in log_lines(isolated_home)[-1]


@pytest.mark.parametrize("misbehaving", [(True, 200)], indirect=True)
def test_stop_and_session_end_return_before_their_hand_over_is_answered(
    isolated_home: Path, misbehaving: Misbehaving, tmp_path: Path
) -> None:
    pretend_server(isolated_home, misbehaving.url)
    patient = tmp_path / "tap.toml"
    patient.write_text("[hooks]\ntimeout_s = 60\n")  # a hook that waited would wait for the held answer
    for event, name in (("stop", "Stop"), ("session-end", "SessionEnd")):
        body = payload(name, "s-detached", isolated_home, None)
        run = run_hook(event, body, home=isolated_home, config=patient, timeout=30)
        assert run.returncode == 0 and run.stdout == b"" and run.stderr == b""
        assert misbehaving.answered == 0  # the agent got its answer while the server still held the event
    wait_until(lambda: len(misbehaving.requests) == 2, what="the detached children to deliver both events")
    assert misbehaving.requests == ["/tap/hooks/stop?agent=claude", "/tap/hooks/session-end?agent=claude"]
    misbehaving.release.set()
    wait_until(lambda: misbehaving.answered == 2, what="both answers to be read")
    assert log_lines(isolated_home) == []  # the children had their answers: nothing failed


@pytest.mark.parametrize("misbehaving", [(False, 401), (False, 500)], indirect=True)
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


def test_garbage_input_and_unknown_events(isolated_home: Path) -> None:
    run = run_hook("stop", b"this is not json", home=isolated_home)
    assert_failed_open(run, isolated_home, "Stop", "not JSON")
    odd = run_hook("PostToolUse", PROMPT, home=isolated_home)
    assert odd.returncode == 0 and odd.stdout == b"" and b"unknown hook event" in odd.stderr
    assert "unknown hook event 'PostToolUse'" in log_lines(isolated_home)[-1]
