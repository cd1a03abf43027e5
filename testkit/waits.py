"""Waiting on a condition instead of sleeping: the one way tests wait for something to happen.

`wait_until` / `until` poll a predicate (sync, or from a coroutine) until it holds, return what it
returned, and fail with what was awaited once `within` seconds pass; `finishes` runs a piece of
work and fails if it has not returned by then. The limit is a guard against hanging (or against
work that grows out of all proportion, such as a quadratic copy that would take hours), never a
timing assertion: the bound is generous, and timings live in benchmarks (bench/), never in tests."""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

WITHIN_S = 60.0
POLL_S = 0.02


def wait_until[T](
    predicate: Callable[[], T], *, within: float = WITHIN_S, what: str = "the condition", poll: float = POLL_S
) -> T:
    """Poll `predicate` until it returns something true, and return that; AssertionError naming
    `what` after `within` seconds."""
    deadline = time.monotonic() + within
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {within:g} s waiting for {what}")
        time.sleep(poll)
    return value


async def until[T](
    predicate: Callable[[], T | Awaitable[T]],
    *,
    within: float = WITHIN_S,
    what: str = "the condition",
    poll: float = POLL_S,
) -> T:
    """`wait_until` for a coroutine: the event loop keeps running between polls, and `predicate`
    may be a coroutine function (an HTTP call to a server in this loop, say)."""
    deadline = time.monotonic() + within
    while True:
        value = predicate()
        result: T = await value if inspect.isawaitable(value) else value  # type: ignore[assignment]
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {within:g} s waiting for {what}")
        await asyncio.sleep(poll)


def finishes[T](work: Callable[[], T], *, within: float = WITHIN_S, what: str = "the work") -> T:
    """Run `work` on a daemon thread and return its result (or raise its exception); AssertionError
    naming `what` when it has not returned after `within` seconds (the thread is left to the
    process's exit: a hung test fails instead of hanging the run)."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append((True, work()))
        except BaseException as exc:  # handed to the caller
            outcome.append((False, exc))

    thread = threading.Thread(target=run, name=f"finishes: {what}", daemon=True)
    thread.start()
    thread.join(within)
    if not outcome:
        raise AssertionError(f"{what} did not finish within {within:g} s")
    ok, value = outcome[0]
    if not ok:
        raise value
    return value  # type: ignore[no-any-return]
