"""Client connections that hold tap's port without using it are closed (slowloris and kin).

aiohttp closes an idle keep-alive connection after its `keepalive_timeout` (`[server]
idle_timeout_s`, which also bounds slow headers of a connection's later requests), but not a new
connection sending its headers a byte at a time, nor a request body that stops mid-way: each holds
a file descriptor, and enough of them refuse every other client. `ConnectionGuard`:
- closes a new connection whose first request's headers are not complete within
  `[server] header_timeout_s`;
- closes a connection whose request body stops arriving for that long (the handler reading it is
  cancelled, tap.wiring.server runs the app with aiohttp's handler cancellation);
- closes at once a connection beyond `[server] max_connections_per_client` open from one address.

It watches the server through the two calls every connection makes to it (`connection_made`,
`connection_lost`) and a middleware (`guard_request`) that sees each request start; one sweep a
second checks the deadlines. Counters are in `/tap/status` (`connections`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

log = logging.getLogger(__name__)
SWEEP_S = 1.0
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class _Open:
    """One open connection as the guard sees it."""

    peer: str
    transport: asyncio.Transport
    opened: float
    requests: list[web.BaseRequest] = field(default_factory=list)
    started: bool = False  # a request's headers were complete
    body_seen: dict[int, tuple[int, float]] = field(default_factory=dict)  # id(request) -> (bytes, since)


class ConnectionGuard:
    """Deadlines and a per-address cap for the connections of one aiohttp server."""

    def __init__(self, *, header_timeout_s: float, max_per_client: int) -> None:
        self.header_timeout_s = header_timeout_s
        self.max_per_client = max_per_client
        self._open: dict[object, _Open] = {}
        self._per_peer: Counter[str] = Counter()
        self.refused = 0
        self.slow_headers = 0
        self.stalled_bodies = 0

    def attach(self, server: Any) -> None:
        """Hook into an aiohttp `web.Server` (`AppRunner.server`): its connection callbacks."""
        made, lost = server.connection_made, server.connection_lost

        def connection_made(handler: object, transport: asyncio.Transport) -> None:
            made(handler, transport)
            self.opened(handler, transport)

        def connection_lost(handler: object, exc: BaseException | None = None) -> None:
            self.closed(handler)
            lost(handler, exc)

        server.connection_made = connection_made
        server.connection_lost = connection_lost

    def opened(self, handler: object, transport: asyncio.Transport) -> None:
        """A client connected: refused at once when its address holds too many connections."""
        peer = _peer(transport)
        if self.max_per_client and self._per_peer[peer] >= self.max_per_client:
            self.refused += 1
            if self.refused == 1 or self.refused % 1000 == 0:
                log.warning(
                    "refused a connection from %s: it holds %d ([server] max_connections_per_client) [%d so far]",
                    peer,
                    self._per_peer[peer],
                    self.refused,
                )
            transport.close()
            return
        self._per_peer[peer] += 1
        self._open[handler] = _Open(peer, transport, time.monotonic())

    def closed(self, handler: object) -> None:
        """A connection ended."""
        gone = self._open.pop(handler, None)
        if gone is not None:
            self._per_peer[gone.peer] -= 1
            if self._per_peer[gone.peer] <= 0:
                del self._per_peer[gone.peer]

    @web.middleware
    async def guard_request(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """The request's headers are complete: its connection has met the header deadline; its body
        is watched while the handler runs."""
        conn = self._open.get(request.protocol)
        if conn is None:
            return await handler(request)
        conn.started = True
        conn.requests.append(request)
        try:
            return await handler(request)
        finally:
            conn.requests.remove(request)
            conn.body_seen.pop(id(request), None)

    def sweep(self, now: float | None = None) -> None:
        """Close what missed a deadline (called every SWEEP_S)."""
        now = time.monotonic() if now is None else now
        for conn in list(self._open.values()):
            if not conn.started and now - conn.opened > self.header_timeout_s:
                self.slow_headers += 1
                conn.transport.close()
                continue
            for request in conn.requests:
                if request.content.is_eof():
                    continue
                seen, since = conn.body_seen.get(id(request), (-1, now))
                total = request.content.total_bytes
                if total != seen:
                    conn.body_seen[id(request)] = (total, now)
                elif now - since > self.header_timeout_s:
                    self.stalled_bodies += 1
                    conn.transport.close()
                    break

    async def keep_sweeping(self, stop: asyncio.Event) -> None:
        """Sweep every SWEEP_S until `stop`."""
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), SWEEP_S)
            except TimeoutError:
                self.sweep()

    def status(self) -> dict[str, Any]:
        """For /tap/status."""
        return {
            "open": len(self._open),
            "clients": len(self._per_peer),
            "refused_over_cap": self.refused,
            "closed_slow_headers": self.slow_headers,
            "closed_stalled_bodies": self.stalled_bodies,
        }


def _peer(transport: asyncio.Transport) -> str:
    info = transport.get_extra_info("peername")
    return str(info[0]) if isinstance(info, tuple) and info else str(info)
