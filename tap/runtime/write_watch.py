"""Store writes that do not come back: noticed and reported, since they cannot be abandoned.

A thread inside a store library's write cannot be stopped from Python. `WriteWatch` notes when each
write began (`writing`), and `stuck` says which has been running longer than STUCK_S: health
reports it (tap.runtime.health, through the store's `problem`) so an operator sees the store hang
instead of a server that merely stopped extracting. The disk guard (tap.runtime.diskspace) keeps
the known cause of such a hang, a full disk under embedded Chroma, from happening at all.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

STUCK_S = 30.0


class WriteWatch:
    """When each store write under way began (thread-safe)."""

    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self._now = now
        self._lock = threading.Lock()
        self._began: dict[int, float] = {}
        self._ids = 0

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Around one write."""
        with self._lock:
            self._ids += 1
            key = self._ids
            self._began[key] = self._now()
        try:
            yield
        finally:
            with self._lock:
                del self._began[key]

    def stuck(self, what: str = "memory store write") -> str:
        """What to report when a write has run longer than STUCK_S ("" otherwise)."""
        with self._lock:
            oldest = min(self._began.values(), default=None)
        if oldest is None or self._now() - oldest <= STUCK_S:
            return ""
        return f"a {what} has not returned for {self._now() - oldest:.0f} s (extraction waits behind it)"
