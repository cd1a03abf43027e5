"""The memory browser page at `/ui`: three static files (HTML, CSS, JS) from proxy/static, and
the site's icon at `/favicon.ico` (where browsers look for it), also from there.

The page holds no secret: its script asks for the admin token, or trades the one-time `#code=` of
`tap ui`'s link (the part after `#` never leaves the browser) for a session (proxy.signin), and keeps
the token in the tab's sessionStorage. Every file
goes out with a strict Content-Security-Policy: scripts and styles only from these files (no inline
code, so injected markup cannot run), requests only to tap's own origin, no framing.
"""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

STATIC = Path(__file__).with_name("static")
_FILES = {"ui.css": "text/css", "ui.js": "text/javascript"}
_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_HEADERS = {
    "Content-Security-Policy": _CSP,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


async def page(request: web.Request) -> web.Response:
    """The page itself."""
    body = (STATIC / "ui.html").read_bytes()
    return web.Response(body=body, content_type="text/html", charset="utf-8", headers=_HEADERS)


async def asset(request: web.Request) -> web.Response:
    """The page's stylesheet and script (nothing else under /ui/)."""
    name = request.match_info["name"]
    if name not in _FILES:
        raise web.HTTPNotFound(text='{"error": "no such file"}', content_type="application/json")
    return web.Response(body=(STATIC / name).read_bytes(), content_type=_FILES[name], charset="utf-8", headers=_HEADERS)


async def favicon(request: web.Request) -> web.Response:
    """The icon browsers ask every site for (a 32-pixel ICO: a white drop on tap's blue)."""
    headers = {"X-Content-Type-Options": "nosniff", "Cache-Control": "max-age=86400"}
    return web.Response(body=(STATIC / "favicon.ico").read_bytes(), content_type="image/x-icon", headers=headers)


def add_ui_routes(app: web.Application) -> None:
    """Register `/ui`, its two assets and `/favicon.ico`."""
    app.router.add_get("/ui", page)
    app.router.add_get("/ui/{name}", asset)
    app.router.add_get("/favicon.ico", favicon)
