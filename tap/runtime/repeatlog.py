"""Repeated failures log one line with a count, not a traceback each time.

    failures = RepeatLog(log)
    failures.failed("extract", "extraction of chunk %s failed", chunk_id, exc=exc)

The first failure of a kind within `every_s` seconds is logged with its traceback; the following
ones are counted, and the next time that kind fails after the interval one line says how many
there were ("… (37 more since 12:00:05, same error)"). `recovered(kind)` logs once that it works
again, with the count. Thread-safe; cheap when nothing is logged.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from tap.plural import plural


@dataclass
class _Kind:
    logged_at: float
    since_logged: int = 0
    total: int = 0


class RepeatLog:
    """Rate-limited failure logging per kind (see the module docstring)."""

    def __init__(
        self, log: logging.Logger, *, every_s: float = 60.0, now: Callable[[], float] = time.monotonic
    ) -> None:
        self.log = log
        self.every_s = every_s
        self._now = now
        self._kinds: dict[str, _Kind] = {}
        self._lock = threading.Lock()

    def failed(
        self, kind: str, message: str, *args: object, exc: BaseException | None = None, level: int = logging.WARNING
    ) -> None:
        """Record one failure; logs it (with its traceback the first time) unless one was logged
        less than `every_s` ago."""
        now = self._now()
        with self._lock:
            entry = self._kinds.get(kind)
            if entry is None:
                self._kinds[kind] = _Kind(logged_at=now, total=1)
                first = True
            else:
                entry.total += 1
                entry.since_logged += 1
                if now - entry.logged_at < self.every_s:
                    return
                first, repeats = False, entry.since_logged - 1
                entry.logged_at, entry.since_logged = now, 0
        if first:
            self.log.log(level, message, *args, exc_info=exc)
            return
        detail = f": {type(exc).__name__}: {exc}" if exc is not None else ""
        more = f" (and {repeats} more like it in the last {self.every_s:.0f} s)" if repeats else ""
        self.log.log(level, message + detail + more, *args)

    def recovered(self, kind: str, message: str, *args: object) -> None:
        """The kind works again: one line with how many failures there were (nothing if none)."""
        with self._lock:
            entry = self._kinds.pop(kind, None)
        if entry is not None:
            self.log.info(message + f" (after {plural(entry.total, 'failure')})", *args)

    def count(self, kind: str) -> int:
        """Failures of a kind since it last recovered."""
        with self._lock:
            entry = self._kinds.get(kind)
            return entry.total if entry else 0
