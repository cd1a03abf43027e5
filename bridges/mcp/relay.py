"""The tools answered by the running `tap serve`: each call goes to its `/mcp` endpoint.

A `tap mcp` process started by an agent relays to the server whenever one runs (`tap serve`
holds the data dir: one writer), with the admin token and the caller's scope in the headers
(`x-tap-scope`, percent-encoded UTF-8: a project scope is a path). One short connection per call
(the endpoint is stateless): a server restarted between two calls is simply found again. A server
that cannot be reached raises `Unreachable` (the caller may answer another way); the server's own
error results come back as ToolCallError with its message.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import TextContent

from bridges.mcp.tools import ToolCallError

SCOPE_HEADER = "x-tap-scope"
MCP_PATH = "/mcp"
TIMEOUT_S = 60.0


class Unreachable(Exception):
    """The server did not answer (not running any more, or not listening where it said)."""


def scope_header(scope: str) -> str:
    """A scope as the `x-tap-scope` header value of the MCP endpoint."""
    return quote(scope, safe="")


class RelayTools:
    """A ToolBackend that forwards every call to a running server's `/mcp`."""

    def __init__(self, url: str, token: str, scope: str, *, timeout_s: float = TIMEOUT_S) -> None:
        self.url = url.rstrip("/") + MCP_PATH
        self.headers = {"Authorization": f"Bearer {token}", SCOPE_HEADER: scope_header(scope)}
        self.timeout_s = timeout_s

    async def call(self, tool: str, arguments: dict[str, Any]) -> str:
        """The server's answer; ToolCallError for its error results, Unreachable when it did not answer."""
        try:
            async with (
                httpx2.AsyncClient(headers=self.headers, timeout=self.timeout_s, trust_env=False) as http,
                Client(streamable_http_client(self.url, http_client=http), cache=None) as client,
            ):
                result = await client.call_tool(tool, arguments)
        except Exception as exc:  # connection refused, reset, a timeout: anyio may wrap it in a group
            raise Unreachable(f"tap serve at {self.url} did not answer ({_reason(exc)})") from None
        text = "\n".join(block.text for block in result.content if isinstance(block, TextContent))
        if result.is_error:
            raise ToolCallError(text or "tap serve reported an error")
        return text


def _reason(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
