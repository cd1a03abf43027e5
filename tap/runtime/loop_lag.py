"""How late the event loop runs what it is given: its lag, for `/tap/status` and `tap status`.

The event loop of `tap serve` relays every chunk of every stream and hands every recall's result
to its request. The watcher sleeps `interval_s` again and again and records how much later than
asked it woke; the status gives p50 / p99 / max over the last `window` wake-ups (a minute). Idle,
the loop is on time; under load the lag is the wait every callback handed to the loop shares.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from typing import Any

from tap.runtime.metrics import percentile

INTERVAL_S = 0.1
WINDOW = 600


class LoopLag:
    """The event loop's recent lag (see the module docstring)."""

    def __init__(self, *, interval_s: float = INTERVAL_S, window: int = WINDOW) -> None:
        self.interval_s = interval_s
        self._lags: deque[float] = deque(maxlen=window)

    async def watch(self, stop: asyncio.Event) -> None:
        """Measure until `stop` is set."""
        while not stop.is_set():
            due = time.monotonic() + self.interval_s  # not loop.time(): uvloop's is cached per turn
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.interval_s)
            if not stop.is_set():
                self._lags.append(max(0.0, time.monotonic() - due))

    def status(self) -> dict[str, Any]:
        """p50 / p99 / max in milliseconds over the window, and how many wake-ups it holds."""
        lags = list(self._lags)
        return {
            "samples": len(lags),
            "p50_ms": round(1000 * percentile(lags, 0.50), 1),
            "p99_ms": round(1000 * percentile(lags, 0.99), 1),
            "max_ms": round(1000 * max(lags, default=0.0), 1),
        }
