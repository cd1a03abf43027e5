"""make_web_app: the web app, the one aiohttp application on tap's port (LLM API proxy routes,
admin API, hook endpoints, the MCP endpoint, the web page). Not to be confused with the runtime (tap.wiring.runtime:
the core services over the store) or the Telegram bot's application (bridges.telegram: PTB's
`Application`, called `BotApplication` here)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
from aiohttp import web

from proxy.admin import add_admin_routes, require_token, tap_errors
from proxy.connections import ConnectionGuard
from proxy.context import ServerContext, context_key, session_key
from proxy.error_shapes import error_shape
from proxy.guard import guard, install_guard
from proxy.hooks_routes import add_hook_routes
from proxy.lifecycle_routes import add_lifecycle_routes
from proxy.mcp_route import add_mcp_routes
from proxy.routes import add_proxy_routes


async def upstream_session(app: web.Application) -> AsyncIterator[None]:
    """One pooled client session to the upstreams for the app's lifetime."""
    upstream = app[context_key].config.upstream
    timeout = aiohttp.ClientTimeout(
        total=None,
        connect=upstream.connect_timeout_s,
        sock_connect=upstream.connect_timeout_s,
        sock_read=upstream.read_timeout_s,
    )
    connector = aiohttp.TCPConnector(limit=0, limit_per_host=0, ttl_dns_cache=300)
    async with aiohttp.ClientSession(
        timeout=timeout,
        connector=connector,
        auto_decompress=False,
        skip_auto_headers=("User-Agent",),
        trust_env=False,
    ) as session:
        app[session_key] = session
        yield


connections_key = web.AppKey("tap_connections", ConnectionGuard)


def make_web_app(ctx: ServerContext) -> web.Application:
    """Build the application around a ServerContext. Whoever runs it attaches the connection guard
    (`app[connections_key].attach(runner.server)`) and sweeps it (proxy.connections)."""
    server = ctx.config.server
    connections = ConnectionGuard(
        header_timeout_s=server.header_timeout_s, max_per_client=server.max_connections_per_client
    )
    app = web.Application(
        middlewares=[connections.guard_request, guard, error_shape, tap_errors, require_token],
        client_max_size=ctx.config.proxy.max_body_mb * 1024 * 1024,
        # request bodies are taken as sent: a compressed body is forwarded with its Content-Encoding
        # (and gets no memories); an encoding aiohttp cannot decode is then no error at all
        handler_args={"auto_decompress": False},
    )
    app[context_key] = ctx
    app[connections_key] = connections
    install_guard(app)
    app.cleanup_ctx.append(upstream_session)
    add_admin_routes(app)
    add_lifecycle_routes(app)
    add_hook_routes(app)
    add_mcp_routes(app)
    add_proxy_routes(app)
    return app
