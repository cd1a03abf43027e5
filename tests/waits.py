"""Waiting on a condition instead of sleeping: the one way tests wait for something to happen.

`wait_until` / `until` poll a predicate (sync, or from a coroutine) until it holds and fail with
what was awaited once `within` seconds pass. The limit is a guard against hanging, not a timing
assertion: timings live in benchmarks (bench/), never in tests.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

WITHIN_S = 60.0
POLL_S = 0.02


def wait_until(
    predicate: Callable[[], object], *, within: float = WITHIN_S, what: str = "the condition", poll: float = POLL_S
) -> None:
    """Poll `predicate` until it is true; AssertionError naming `what` after `within` seconds."""
    deadline = time.monotonic() + within
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {within:g} s waiting for {what}")
        time.sleep(poll)


async def until(
    predicate: Callable[[], object], *, within: float = WITHIN_S, what: str = "the condition", poll: float = POLL_S
) -> None:
    """`wait_until` for a coroutine: the event loop keeps running between polls."""
    deadline = time.monotonic() + within
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {within:g} s waiting for {what}")
        await asyncio.sleep(poll)
