"""Browser protection for tap's port: web pages the user visits can neither write nor read through tap.

A page in the user's browser can send requests to `http://127.0.0.1:8787` — `text/plain` or form
POSTs need no CORS preflight, so without a check any site could plant memories through
`/v1/messages` or `/api/chat` (a persistent prompt injection) — and a DNS-rebinding page (its own
name, re-resolved to 127.0.0.1) is "same origin" to the browser and could read the admin API.
`guard` (the first middleware) refuses both, and nothing a non-browser client sends is affected:

1. Host: the `Host` header must be a loopback name (`localhost`, `*.localhost`), an IP literal (an
   address cannot be rebound: a rebinding page always sends its own *name*), or a name in
   `[server] allowed_hosts`. A request without `Host` (not a browser) passes. The Telegram
   webhook path skips this check (Telegram reaches it through a tunnel or reverse proxy under a
   public name, and it is authenticated by its secret header, which no page can send).
2. Origin: a request carrying `Origin` (browsers send it with every POST, and with every
   cross-origin fetch) must come from tap's own origin (the `/ui` page: scheme-less host and port
   equal to `Host`) or from an origin in `[server] allowed_origins` (`"*"` allows all); `null`
   (sandboxed frames, `file:` pages) is foreign.
3. `Sec-Fetch-Site: cross-site` (what browsers send for a request another site started: an
   `<img>`, a form, a link) is refused unless its origin is allowed explicitly.
4. `OPTIONS` is answered here, never forwarded: 204 with `Allow`, and CORS granted
   (`Access-Control-Allow-Origin` …) only to an allowed origin; responses to an allowed origin's
   requests carry `Access-Control-Allow-Origin` too (`add_cors_headers`, an `on_response_prepare`
   hook). No other origin ever gets a CORS header, so even a request that slipped through could
   not be read by the page.

SDKs (Anthropic, OpenAI, Ollama), `curl` (with `-d` and no content type, as Ollama's docs do) and
other programs send no `Origin` and no `Sec-Fetch-*` headers, so the content type is never
checked. Refusals are 403 in the route's own error shape (the dialect's for the API paths,
`{"error": …}` elsewhere) and say which setting allows the request.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from urllib.parse import urlsplit

from aiohttp import web

from proxy.context import context_key
from proxy.error_shapes import shaped_error
from tap.config import Config

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
ALLOWED_METHODS = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Policy:
    """Which hosts and origins the port answers (from `[server]`)."""

    hosts: frozenset[str]
    origins: frozenset[str]
    exempt_paths: frozenset[str] = frozenset()

    @classmethod
    def from_config(cls, config: Config) -> Policy:
        """The policy of a config: its allowed hosts and origins, and the Telegram webhook path."""
        exempt = {config.telegram.path} if config.telegram.enabled else set()
        hosts = {_normal_host(h) for h in config.server.allowed_hosts}
        if config.server.host and not _is_wildcard(config.server.host):
            hosts.add(_normal_host(config.server.host))
        return cls(
            hosts=frozenset(hosts),
            origins=frozenset(o.rstrip("/").lower() for o in config.server.allowed_origins),
            exempt_paths=frozenset(exempt),
        )

    def origin_allowed(self, origin: str) -> bool:
        """An origin listed in `allowed_origins` (or `"*"` is)."""
        return "*" in self.origins or origin.rstrip("/").lower() in self.origins


def _is_wildcard(host: str) -> bool:
    return host in ("0.0.0.0", "::", "")


def _normal_host(host: str) -> str:
    return host.strip().lower().rstrip(".")


def split_host(value: str) -> tuple[str, int | None]:
    """`Host` header → (lower-case name or address without brackets, port or None)."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end == -1:
            return value, None
        host, rest = value[1:end], value[end + 1 :]
        port = rest[1:] if rest.startswith(":") else ""
    elif value.count(":") == 1:
        host, port = value.split(":", 1)
    else:
        host, port = value, ""
    return host.rstrip("."), int(port) if port.isdigit() else None


def is_ip_literal(host: str) -> bool:
    """True for an IPv4 or IPv6 address (zone ids allowed)."""
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True


def host_allowed(value: str, allowed: Collection[str]) -> bool:
    """Whether a `Host` header names this machine in a way no other site can (see the module doc)."""
    host, _ = split_host(value)
    if not host:
        return True
    return host == "localhost" or host.endswith(".localhost") or is_ip_literal(host) or host in allowed


def same_origin(origin: str, host_header: str, scheme: str) -> bool:
    """Whether `Origin` is tap's own origin (the scheme, host and port the request was sent to)."""
    parts = urlsplit(origin)
    if not parts.scheme or not parts.hostname:
        return False
    try:
        origin_port = parts.port or _DEFAULT_PORTS.get(parts.scheme)
    except ValueError:
        return False
    host, port = split_host(host_header)
    return (
        parts.scheme == scheme
        and _normal_host(parts.hostname) == host
        and origin_port == (port or _DEFAULT_PORTS.get(scheme))
    )


def check(request: web.Request, policy: Policy) -> str:
    """Why the request is refused ("" when it may go on)."""
    host = request.headers.get("Host", "")
    if request.path not in policy.exempt_paths and not host_allowed(host, policy.hosts):
        return (
            f"tap does not answer requests for host {split_host(host)[0]!r} (a web page may be trying to reach "
            "it through DNS rebinding); to use this name, add it to [server] allowed_hosts"
        )
    origin = request.headers.get("Origin")
    explicit = origin is not None and policy.origin_allowed(origin)
    if origin is not None and not explicit and not same_origin(origin, host, request.scheme):
        return (
            f"tap does not answer requests from web pages of other origins ({origin}); "
            "to let a browser app use tap, add its origin to [server] allowed_origins"
        )
    if request.headers.get("Sec-Fetch-Site", "").lower() == "cross-site" and not explicit:
        return (
            "tap does not answer requests another site started (Sec-Fetch-Site: cross-site); "
            "open tap's pages directly, or add the site's origin to [server] allowed_origins"
        )
    return ""


def _preflight(request: web.Request, policy: Policy) -> web.Response:
    """OPTIONS: answered locally; CORS only for an allowed origin."""
    response = web.Response(status=204, headers={"Allow": ALLOWED_METHODS})
    origin = request.headers.get("Origin")
    if origin is not None and policy.origin_allowed(origin):
        response.headers.update(
            {
                "Access-Control-Allow-Origin": origin,
                "Access-Control-Allow-Methods": ALLOWED_METHODS,
                "Access-Control-Allow-Headers": request.headers.get("Access-Control-Request-Headers", "*"),
                "Access-Control-Max-Age": "600",
                "Vary": "Origin",
            }
        )
    return response


@web.middleware
async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Refuse browser requests from other sites and DNS-rebinding hosts; answer OPTIONS locally."""
    policy = _policy(request.app)
    reason = check(request, policy)
    if reason:
        return shaped_error(request, 403, reason)
    if request.method == "OPTIONS":
        return _preflight(request, policy)
    return await handler(request)


async def add_cors_headers(request: web.Request, response: web.StreamResponse) -> None:
    """`on_response_prepare`: an allowed origin may read the response (nobody else ever may)."""
    origin = request.headers.get("Origin")
    if origin is not None and _policy(request.app).origin_allowed(origin):
        response.headers["Access-Control-Allow-Origin"] = origin
        response.headers["Vary"] = "Origin"


policy_key = web.AppKey("tap_guard_policy", Policy)


def _policy(app: web.Application) -> Policy:
    return app[policy_key]


def install_guard(app: web.Application) -> None:
    """Compute the policy once and add the CORS hook (the middleware itself goes first in `make_web_app`)."""
    app[policy_key] = Policy.from_config(app[context_key].config)
    app.on_response_prepare.append(add_cors_headers)
