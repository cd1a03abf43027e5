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
    seen, deadline = b"", time.monotonic() + GUARD_S
    waiting = select.poll()
    waiting.register(leader, select.POLLIN)
    try:
        while time.monotonic() < deadline:
            ready = waiting.poll(200)
            if ready:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                seen += chunk
            elif proc.poll() is not None:
                break
        out = proc.stdout.read().decode() if proc.stdout else ""
        return proc.wait(timeout=30), out, seen.decode(errors="replace")
    finally:
        os.close(leader)
        if proc.poll() is None:
            proc.kill()
