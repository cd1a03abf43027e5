"""Counters for `/tap/status` and `tap status`: requests, degradations, recall latency.

Cheap to update from the hot path (a lock-free deque append and integer adds under the GIL);
percentiles are computed only when someone asks.
"""

from __future__ import annotations

import logging
import time
from collections import Counter, deque
from collections.abc import Callable
from typing import Any

_LATENCY_WINDOW = 2048
_LOG_EVERY_S = 60.0
log = logging.getLogger("tap.degraded")


def percentile(values: list[float], fraction: float) -> float:
    """The nearest-rank percentile of values (0 when empty)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * len(ordered) + 0.5) - 1))
    return ordered[index]


class Metrics:
    """Process-wide counters; `sections` lets other parts (queue, cost) add their own status."""

    def __init__(self, *, now: Callable[[], float] = time.time) -> None:
        self._now = now
        self.started_at = now()
        self.requests: Counter[str] = Counter()
        self.degraded: Counter[str] = Counter()
        self.recalled = 0
        self._recall_ms: deque[float] = deque(maxlen=_LATENCY_WINDOW)
        self.sections: dict[str, Callable[[], Any]] = {}
        self._last_logged: dict[str, float] = {}

    def request(self, dialect: str) -> None:
        """Count one proxied request."""
        self.requests[dialect] += 1

    def recall_done(self, elapsed_ms: float, memories: int) -> None:
        """Record one recall's latency and how many memories it injected."""
        self._recall_ms.append(elapsed_ms)
        self.recalled += memories

    def degrade(self, reason: str, detail: str = "") -> None:
        """Count a request forwarded without memories; log each reason at most once a minute."""
        self.degraded[reason] += 1
        now = self._now()
        if now - self._last_logged.get(reason, -_LOG_EVERY_S) >= _LOG_EVERY_S:
            self._last_logged[reason] = now
            log.warning("forwarding without memories (%s): %s [%d so far]", reason, detail, self.degraded[reason])

    def snapshot(self) -> dict[str, Any]:
        """Everything as JSON-able builtins."""
        latencies = list(self._recall_ms)
        out: dict[str, Any] = {
            "uptime_s": round(self._now() - self.started_at, 1),
            "requests": dict(self.requests),
            "requests_total": sum(self.requests.values()),
            "degraded": dict(self.degraded),
            "degraded_total": sum(self.degraded.values()),
            "memories_injected": self.recalled,
            "recall_ms": {
                "count": len(latencies),
                "p50": round(percentile(latencies, 0.50), 3),
                "p95": round(percentile(latencies, 0.95), 3),
                "p99": round(percentile(latencies, 0.99), 3),
            },
        }
        for name, section in self.sections.items():
            out[name] = section()
        return out
