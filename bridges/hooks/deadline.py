"""A hard limit on a hook process's life: when it passes, the process exits 0 with no output.

Agents wait for a hook (Claude Code runs UserPromptSubmit before sending the prompt), so a hook
that hangs on a slow server or a busy store would hold the user up. `Deadline(seconds, on_expire)`
starts a daemon timer; at expiry it calls `on_expire` (which writes the log line) and ends the
process with `os._exit(0)` — no output has been written by then, because output is written only
after `finish()` won the race against the timer. Every write tap makes on the way (SQLite) is
transactional, so ending mid-way loses nothing that was acknowledged.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable


class Deadline:
    """Exit 0 silently at `seconds` unless `finish()` was called first."""

    def __init__(self, seconds: float, on_expire: Callable[[], None]) -> None:
        self._lock = threading.Lock()
        self._on_expire = on_expire
        self._timer = threading.Timer(max(0.0, seconds), self._expire)
        self._timer.daemon = True
        self._timer.start()

    def _expire(self) -> None:
        if not self._lock.acquire(blocking=False):
            return  # the process is writing its output: let it finish
        try:
            self._on_expire()
        finally:
            os._exit(0)

    def finish(self) -> bool:
        """Claim the right to write output; False when the deadline already fired (then write nothing)."""
        if not self._lock.acquire(blocking=False):
            return False
        self._timer.cancel()
        return True
