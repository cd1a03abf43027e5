"""tap.runtime.loop_lag: the event loop's lag, as `/tap/status` reports it."""

from __future__ import annotations

import asyncio
import time

from tap.runtime.loop_lag import LoopLag
from testkit.waits import until


def _block(seconds: float) -> None:
    """Keep the calling event loop busy (blocked) for `seconds`."""
    time.sleep(seconds)


async def test_a_blocked_loop_shows_as_lag_and_the_watcher_stops_when_told() -> None:
    lag = LoopLag(interval_s=0.01)
    stop = asyncio.Event()
    watching = asyncio.ensure_future(lag.watch(stop))
    await until(lambda: lag.status()["samples"] >= 5)
    assert lag.status()["max_ms"] < 250
    _block(0.3)
    await until(lambda: lag.status()["max_ms"] >= 250, what="the blocked 300 ms in the lag")
    stop.set()
    await asyncio.wait_for(watching, 5)
    assert LoopLag().status() == {"samples": 0, "p50_ms": 0.0, "p99_ms": 0.0, "max_ms": 0.0}
