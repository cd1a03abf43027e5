"""Background threads yield the CPU, and the GIL, to the hot path.

Extraction can keep every core busy for minutes during a backfill, while the proxy's event loop
and its recall threads must answer within milliseconds. On Linux a thread is its own scheduling
entity, so raising the nice value of just the background threads makes the scheduler prefer the
hot path whenever both want a core, and costs nothing on an idle machine (elsewhere: a no-op).
Only threads created for background work call it: a thread's niceness cannot be lowered again
without privileges, so a shared pool thread must never call it.

A nice value does not help where a background thread holds the GIL: embedded Chroma keeps it for a
whole write. So a background writer writes in small batches (`write_parts`), and while requests are
being relayed (`HOT_PATH`, counted by the proxy's LLM routes, the agent hook route and the
mitmproxy addon) it pauses after each batch (`yield_after`), holding the GIL at most
BACKGROUND_WRITE_SHARE of the time; with nothing in flight (a backfill, the CLI) it does not wait.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncio  # imported where waited on: the CLI's reads import this module, not the event loop

BACKGROUND_NICE = 10
BACKGROUND_WRITE_SHARE = 1 / 3


def lower_thread_priority(nice: int = BACKGROUND_NICE) -> bool:
    """Make the calling thread yield to the rest of the process; True when it took effect."""
    if sys.platform != "linux":
        return False
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, max(os.getpriority(os.PRIO_PROCESS, tid), nice))
    except OSError:
        return False
    return True


def thread_nice() -> int:
    """The calling thread's nice value (Linux), else the process's."""
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id() if sys.platform == "linux" else 0)


class HotPath:
    """How many requests the proxy is relaying now (see the module docstring)."""

    def __init__(self) -> None:
        self._serving = 0
        self._lock = threading.Lock()
        self._last = 0.0  # time.monotonic() when the last request ended

    @contextlib.contextmanager
    def serving(self) -> Iterator[None]:
        """Count a request while the block runs."""
        self.enter()
        try:
            yield
        finally:
            self.leave()

    def enter(self) -> None:
        """A request starts (each `enter` is followed by one `leave`, whatever happens)."""
        with self._lock:
            self._serving += 1

    def leave(self) -> None:
        """A request is over."""
        with self._lock:
            self._serving -= 1
            self._last = time.monotonic()

    @property
    def serving_now(self) -> int:
        """How many requests are being relayed now."""
        return self._serving

    @property
    def busy(self) -> bool:
        """Whether a request is being relayed now."""
        return self._serving > 0

    def quiet_for(self, seconds: float) -> bool:
        """Whether no request was relayed during the last `seconds`."""
        return self._serving == 0 and time.monotonic() - self._last >= seconds


HOT_PATH = HotPath()


def relaying() -> bool:
    """Whether the proxy is relaying a request now (see the module docstring)."""
    return HOT_PATH.busy


def quiet_for(seconds: float) -> bool:
    """Whether the proxy relayed no request during the last `seconds`."""
    return HOT_PATH.quiet_for(seconds)


async def wait_for_gap(stop: asyncio.Event, *, quiet_s: float, give_up_at: float, poll_s: float) -> bool:
    """Wait until the proxy relayed no request for `quiet_s` (0: none is being relayed now), or
    until `give_up_at` (time.monotonic()): background work that would hold the GIL beside the
    streams waits for a gap, but under constant traffic it goes on. True when `stop` was set."""
    import asyncio

    while not quiet_for(quiet_s) and time.monotonic() < give_up_at:
        try:
            await asyncio.wait_for(stop.wait(), poll_s)
        except TimeoutError:
            continue
        return True
    return stop.is_set()


def yield_after(started: float) -> None:
    """While the proxy relays requests, pause so that the work begun at `started`
    (time.perf_counter) took at most BACKGROUND_WRITE_SHARE of the time (see the module docstring)."""
    if HOT_PATH.busy:
        time.sleep((time.perf_counter() - started) * (1 / BACKGROUND_WRITE_SHARE - 1))


def write_parts[T](items: Sequence[T], size: int, *, always: bool = False) -> Iterator[Sequence[T]]:
    """The items of one logical write, in the calls a background writer makes: `size` at a time
    while requests are being relayed (or `always`: writes of thousands that run inside the
    server, where a request may come at any moment), the rest at once otherwise (decided again
    before each call: one call is cheaper in all)."""
    start = 0
    while start < len(items):
        step = size if always or HOT_PATH.busy else len(items) - start
        yield items[start : start + step]
        start += step
