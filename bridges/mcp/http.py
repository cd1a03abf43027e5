"""The tools over streamable HTTP, for `/mcp` on `tap serve` (proxy/mcp_route.py adapts aiohttp to
the ASGI handler here).

Stateless with JSON answers: every POST carries one message and gets its answer in the response,
no session lives between requests (nothing to expire, nothing lost on a restart), so the relay in
a `tap mcp` process (bridges.mcp.relay) can open a connection per call. The SDK's own Host/Origin
check is off: tap's guard (proxy/guard.py) runs first on every path of the port, with the rules
the rest of tap keeps. `serve` runs the SDK's task group for as long as the app runs.
"""

from __future__ import annotations

import asyncio

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import Receive, Scope, Send


class HttpEndpoint:
    """An ASGI handler for `/mcp` over an MCPServer, and the task that keeps it running."""

    def __init__(self, server: MCPServer) -> None:
        server.streamable_http_app(
            stateless_http=True,
            json_response=True,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self.manager = server.session_manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one HTTP request (ASGI)."""
        await self.manager.handle_request(scope, receive, send)

    async def serve(self, started: asyncio.Event, stop: asyncio.Event) -> None:
        """Run the SDK's request handling until `stop` is set (one task, start to end)."""
        async with self.manager.run():
            started.set()
            await stop.wait()
