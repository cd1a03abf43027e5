"""make_app: the one aiohttp application on tap's port (proxy routes + admin API)."""

from __future__ import annotations

from aiohttp import web

from proxy.admin import add_admin_routes, require_token, tap_errors
from proxy.context import ProxyContext, context_key


def make_app(ctx: ProxyContext) -> web.Application:
    """Build the application around a ProxyContext."""
    app = web.Application(
        middlewares=[tap_errors, require_token],
        client_max_size=ctx.config.proxy.max_body_mb * 1024 * 1024,
    )
    app[context_key] = ctx
    add_admin_routes(app)
    return app
