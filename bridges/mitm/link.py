"""CoreLink: calls into the interception core on the event loop that owns it.

The interception core (tap.intercept.core.Interceptor) keeps per-conversation state and starts its
capture tasks on one event loop.  Standalone (`tap mitm`) mitmproxy runs on that same loop and
the calls are direct.  Inside `tap serve`, mitmproxy runs on its own loop in its own thread (so
its event-loop settings never touch the aiohttp server), and every call hops to the server's loop:
`before` as a coroutine (`run_coroutine_threadsafe`), `settle` and `after` as callbacks
(`call_soon_threadsafe`).  Callbacks scheduled from one thread run in order, and a later request's
`before` is scheduled after them, so a reply settled before its last chunk reached the client is
settled before the client's next request is looked at, as in the proxy.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from tap.intercept.core import Before, Interception, Interceptor
from tap.intercept.dialects import Dialect, Reply
from tap.recall.why import RequestNote

log = logging.getLogger("tap.mitm")


class CoreLink:
    """The interceptor's before / settle / after, called on the interceptor's loop."""

    def __init__(self, interceptor: Interceptor, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.interceptor = interceptor
        self.loop = loop
        """The loop the interceptor lives on; None: the loop mitmproxy runs on."""

    def _here(self) -> bool:
        if self.loop is None:
            return True
        try:
            return asyncio.get_running_loop() is self.loop
        except RuntimeError:
            return False

    async def before(self, dialect: Dialect, headers: Mapping[str, str], body: bytes, path: str = "") -> Before:
        """`Interceptor.before` for a request that came through mitmproxy (source "mitm")."""
        coro = self.interceptor.before(dialect, headers, body, source="mitm", path=path)
        if self._here():
            return await coro
        assert self.loop is not None
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self.loop))

    def settle(self, ctx: Interception, reply: Reply) -> None:
        """`Interceptor.settle` (scheduled, in order, when the core lives on another loop)."""
        self._call(self.interceptor.settle, ctx, reply)

    def after(self, ctx: Interception, reply: Reply, **outcome: Any) -> None:
        """`Interceptor.after`: capture in the core's background."""
        self._call(lambda: self.interceptor.after(ctx, reply, **outcome))

    def finish(self, note: RequestNote | None, status: int) -> None:
        """`Interceptor.finish`: the log line and record of a request without an after-step."""
        self._call(self.interceptor.finish, note, status)

    def _call(self, fn: Any, *args: Any) -> None:
        if self._here():
            fn(*args)
            return
        assert self.loop is not None
        try:
            self.loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # the server's loop has ended (shutdown): the reply still reaches the client
            log.info("mitm: tap serve is stopping; an exchange was not captured")
