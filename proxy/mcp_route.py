"""The MCP endpoint on tap's port: `/mcp`, the agent tools over streamable HTTP (docs/mcp.md).

Authentication is the admin API's (bearer token, proxy.admin.require_token), and the guard's
Host/Origin rules apply as on every path (proxy/guard.py). The scope the tools run in is the
`x-tap-scope` header, percent-encoded UTF-8 (a project scope is a path), else `default`; it is set
for the request's tasks in tap.memories.agent.caller_scope. The composition root puts the SDK's
ASGI handler on the app under `mcp_key` (bridges.mcp.http); this module only adapts an aiohttp
request to ASGI: the whole body in one `http.request` message, the answer streamed back as the
handler sends it, except an error answer, which is held and given as JSON (a JSON-RPC error: the
SDK refuses some requests in plain text). 503 when the app serves no MCP; 400 for a malformed
scope; 405 for GET and DELETE (stateless: no stream to open, no session to end).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Protocol
from urllib.parse import unquote

from aiohttp import web

from proxy.admin import error
from tap.intercept.projects import MAX_SCOPE
from tap.memories.agent import DEFAULT_AGENT_SCOPE, caller_scope

MCP_PATH = "/mcp"
INVALID_REQUEST = -32600  # JSON-RPC
SCOPE_HEADER = "x-tap-scope"
Message = MutableMapping[str, Any]


class AsgiHandler(Protocol):
    """An ASGI application (the MCP SDK's streamable HTTP handler)."""

    async def __call__(
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[Message]],
        send: Callable[[Message], Awaitable[None]],
    ) -> None: ...


mcp_key = web.AppKey("tap_mcp", AsgiHandler)


def request_scope(request: web.Request) -> str:
    """The tools' scope for a request; ValueError when the header is malformed."""
    raw = request.headers.get(SCOPE_HEADER, "").strip()
    if not raw:
        return DEFAULT_AGENT_SCOPE
    scope = unquote(raw, errors="strict")
    if not scope.strip() or len(scope) > MAX_SCOPE or any(ord(c) < 32 for c in scope):
        raise ValueError(f"{SCOPE_HEADER} must be 1-{MAX_SCOPE} printable characters (percent-encoded UTF-8)")
    return scope


def _asgi_scope(request: web.Request) -> dict[str, Any]:
    transport = request.transport
    peer = transport.get_extra_info("peername") if transport is not None else None
    own = transport.get_extra_info("sockname") if transport is not None else None
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": f"{request.version.major}.{request.version.minor}",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.raw_path.split("?", 1)[0].encode("latin-1", "replace"),
        "query_string": request.query_string.encode("latin-1", "replace"),
        "root_path": "",
        "headers": [(name.lower(), value) for name, value in request.raw_headers],
        "client": tuple(peer[:2]) if peer else None,
        "server": tuple(own[:2]) if own else None,
    }


async def mcp(request: web.Request) -> web.StreamResponse:
    """One streamable HTTP request of an MCP client."""
    handler = request.app.get(mcp_key)
    if handler is None:
        return error(503, "MCP is not served here")
    try:
        caller_scope.set(request_scope(request))
    except (ValueError, UnicodeDecodeError) as exc:
        return error(400, str(exc))
    body = await request.read()
    delivered = False
    done = asyncio.Event()
    response: web.StreamResponse | None = None
    refused: tuple[int, list[tuple[str, str]], bytearray] | None = None  # an error answer, held whole

    async def receive() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await done.wait()  # the exchange is over (aiohttp cancels this handler if the client goes)
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal response, refused
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in message.get("headers", [])]
        if message["type"] == "http.response.start" and int(message["status"]) >= 400:
            refused = (int(message["status"]), headers, bytearray())
        elif message["type"] == "http.response.start":
            response = web.StreamResponse(status=int(message["status"]))
            for name, value in headers:
                response.headers.add(name, value)
            await response.prepare(request)
        elif message["type"] == "http.response.body" and refused is not None:
            refused[2].extend(message.get("body", b""))
        elif message["type"] == "http.response.body" and response is not None:
            await response.write(bytes(message.get("body", b"")))
            if not message.get("more_body", False):
                await response.write_eof()

    try:
        await handler(_asgi_scope(request), receive, send)
    finally:
        done.set()
    if refused is not None:
        return error_answer(*refused)
    if response is None:
        return error(500, "the MCP handler gave no answer")
    return response


def error_answer(status: int, headers: list[tuple[str, str]], body: bytes | bytearray) -> web.Response:
    """The SDK's error answer, as JSON: a JSON-RPC error as it is, its plain-text refusals (a wrong
    content type, an unacceptable Accept header) as a JSON-RPC error with that text."""
    try:
        document = json.loads(body)
    except ValueError:
        document = None
    if not isinstance(document, dict):
        text = body.decode("utf-8", "replace").strip() or f"HTTP {status}"
        document = {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": text}}
    kept = {name: value for name, value in headers if name.lower() in ("www-authenticate", "allow")}
    return web.json_response(document, status=status, headers=kept)


def add_mcp_routes(app: web.Application) -> None:
    """Register `POST /mcp`. Stateless, the endpoint keeps no stream open to the client and no
    session to end: GET and DELETE are 405, as the transport's specification allows."""
    app.router.add_post(MCP_PATH, mcp)
