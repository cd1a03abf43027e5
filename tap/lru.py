"""A bounded, thread-safe map that forgets the least recently used entries and expired ones.

Used by the interception core for everything it keeps per conversation or per turn (the memory
block of each human turn, remembered conversation prefixes, recent first requests, the hook
path's per-session ledger), so none of them can grow without limit.

Invariants: never more than `maxsize` entries; an entry older than `ttl_s` (since it was put, or
last read when `refresh` is set) is never returned; all methods take one lock, so the map can be
shared by the event loop and worker threads.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable


class LRU[K, V]:
    """`get`/`put`/`pop` with a size bound and an optional age limit."""

    def __init__(
        self,
        maxsize: int,
        *,
        ttl_s: float | None = None,
        refresh: bool = True,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        if maxsize < 1:
            raise ValueError("maxsize must be at least 1")
        self.maxsize = maxsize
        self.ttl_s = ttl_s
        self.refresh = refresh
        self._now = now
        self._items: OrderedDict[K, tuple[V, float]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        """The value, or None when absent or expired (an expired entry is dropped)."""
        with self._lock:
            found = self._items.get(key)
            if found is None:
                return None
            value, stamp = found
            now = self._now()
            if self.ttl_s is not None and now - stamp > self.ttl_s:
                del self._items[key]
                return None
            self._items.move_to_end(key)
            if self.refresh:
                self._items[key] = (value, now)
            return value

    def put(self, key: K, value: V) -> None:
        """Store `value` (the newest entry); the oldest ones go when the map is full."""
        with self._lock:
            self._items[key] = (value, self._now())
            self._items.move_to_end(key)
            while len(self._items) > self.maxsize:
                self._items.popitem(last=False)

    def pop(self, key: K) -> V | None:
        """Remove and return the value (None when absent)."""
        with self._lock:
            found = self._items.pop(key, None)
            return None if found is None else found[0]

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)
