"""Run a `tap` command with stderr on a pseudo-terminal, as a user at a terminal would see it
(progress bars are drawn only there), and stdout on a pipe."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

GUARD_S = 180  # only against a hanging command, not a timing


def with_terminal_stderr(args: list[str], home: Path) -> tuple[int, str, str]:
    """Run `tap ARGS` with stderr on a pseudo-terminal and stdout on a pipe: (code, stdout, terminal)."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tap", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=follower,
        env={**os.environ, "TAP_HOME": str(home), "COLUMNS": "100"},
        close_fds=True,
    )
    os.close(follower)
    try:
        seen = _read_terminal(proc, leader)
        out = proc.stdout.read().decode() if proc.stdout else ""
        return proc.wait(timeout=30), out, seen
    finally:
        os.close(leader)
        if proc.poll() is None:
            proc.kill()


def on_a_terminal(args: list[str], home: Path, *, prompt: bytes = b"", answer: str = "") -> tuple[int, str]:
    """Run `tap ARGS` with a pseudo-terminal as stdin, stdout and stderr, typing `answer` once
    `prompt` shows: (code, what the terminal showed)."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tap", *args],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env={**os.environ, "TAP_HOME": str(home)},
        close_fds=True,
    )
    os.close(follower)
    try:
        seen = _read_terminal(proc, leader, prompt=prompt, answer=answer)
        return proc.wait(timeout=30), seen
    finally:
        os.close(leader)
        if proc.poll() is None:
            proc.kill()


def _read_terminal(proc: subprocess.Popen[bytes], leader: int, *, prompt: bytes = b"", answer: str = "") -> str:
    """Everything the command writes to the terminal until it ends (answering `prompt` once)."""
    seen, answered, deadline = b"", not prompt, time.monotonic() + GUARD_S
    waiting = select.poll()  # not select(): in a long test run the descriptor can be past 1024
    waiting.register(leader, select.POLLIN)
    while time.monotonic() < deadline:
        ready = waiting.poll(200)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        if not answered and prompt in seen:
            os.write(leader, answer.encode() + b"\n")
            answered = True
        if proc.poll() is not None and not ready:
            break
    return seen.decode(errors="replace")
