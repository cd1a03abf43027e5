"""An async context manager (a fake upstream from testkit/upstreams/) run on its own event loop in a
thread, for synchronous code: the browser tests (Playwright's sync API) and docs/screenshots.py.

    with InThread(FakeAnthropic()) as up:
        ...  # up.url answers on 127.0.0.1 while the block runs
"""

from __future__ import annotations

import asyncio
import threading
from contextlib import AbstractAsyncContextManager
from typing import Any


class InThread[T]:
    """`with InThread(manager) as value:` enters `manager` on a private loop, exits it on the way out."""

    def __init__(self, manager: AbstractAsyncContextManager[T], timeout: float = 30.0) -> None:
        self._manager = manager
        self._timeout = timeout
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="in-thread-loop", daemon=True)

    def __enter__(self) -> T:
        self._thread.start()
        try:
            return asyncio.run_coroutine_threadsafe(self._enter(), self._loop).result(self._timeout)
        except BaseException:
            self._stop()
            raise

    async def _enter(self) -> T:
        return await self._manager.__aenter__()

    def __exit__(self, *exc: Any) -> None:
        try:
            asyncio.run_coroutine_threadsafe(self._manager.__aexit__(None, None, None), self._loop).result(
                self._timeout
            )
        finally:
            self._stop()

    def _stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()
