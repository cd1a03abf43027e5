"""Forward one request upstream and stream the response back byte for byte, teeing a copy.

Invariants:
- upstream bytes reach the client as they arrive, unchanged and unbuffered; the tee parser sees
  the same chunks (streams) or the whole body (non-streamed JSON) and never blocks forwarding;
- an upstream that refuses the connection is a 502 and one that does not answer in time a 504,
  both in the dialect's own error shape; an upstream error *after* the status line went out is
  passed through as sent (the connection is closed where it broke);
- a client that goes away mid-stream closes the upstream response at once (the upstream request
  is cancelled) and the outcome says what arrived until then.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

import aiohttp
from aiohttp import web
from multidict import CIMultiDict

from proxy.headers import client_response_headers, upstream_request_headers
from tap.dialects import Dialect
from tap.streams import Reply, parse_response, stream_parser

log = logging.getLogger(__name__)
STREAM_TYPES = ("text/event-stream", "application/x-ndjson")
MAX_TEE_BODY = 64 * 1024 * 1024


@dataclass
class Outcome:
    """What happened to one forwarded request."""

    status: int = 0
    reply: Reply = field(default_factory=Reply)
    client_gone: bool = False
    upstream_failed: str = ""


class _Tee:
    """Feeds a copy of the response to the right parser for its content type."""

    def __init__(self, dialect: str, content_type: str) -> None:
        self._dialect = dialect
        self._parser = stream_parser(dialect) if content_type.startswith(STREAM_TYPES) else None
        self._body: list[bytes] = []
        self._size = 0

    def feed(self, chunk: bytes) -> None:
        if self._parser is not None:
            self._parser.feed(chunk)
        elif self._size + len(chunk) <= MAX_TEE_BODY:
            self._body.append(chunk)
            self._size += len(chunk)

    def finish(self) -> Reply:
        if self._parser is not None:
            return self._parser.finish()
        return parse_response(self._dialect, b"".join(self._body))


def error_response(dialect: Dialect, status: int, message: str, extra: Mapping[str, str]) -> web.Response:
    """An error in the dialect's shape with tap's headers."""
    body, content_type = dialect.error_body(status, message)
    response = web.Response(status=status, body=body, headers=CIMultiDict(extra))
    response.content_type = content_type
    return response


async def forward(
    request: web.Request,
    *,
    session: aiohttp.ClientSession,
    url: str,
    body: bytes,
    dialect: Dialect,
    extra_headers: Mapping[str, str],
    tee: bool = True,
) -> tuple[web.StreamResponse, Outcome]:
    """Send body upstream; stream the answer to the client; return the response and outcome."""
    outcome = Outcome()
    try:
        upstream = await session.request(
            request.method,
            url,
            data=body if body or request.method not in ("GET", "HEAD") else None,
            headers=upstream_request_headers(CIMultiDict(request.headers)),
            allow_redirects=False,
        )
    except TimeoutError:
        outcome.status = 504
        return error_response(dialect, 504, f"upstream {_origin(url)} did not answer in time", extra_headers), outcome
    except aiohttp.ClientError as exc:
        outcome.status = 502
        message = f"upstream {_origin(url)} is unreachable: {type(exc).__name__}"
        return error_response(dialect, 502, message, extra_headers), outcome
    async with upstream:
        outcome.status = upstream.status
        return await _relay(request, upstream, dialect, extra_headers, outcome, tee), outcome


async def _relay(
    request: web.Request,
    upstream: aiohttp.ClientResponse,
    dialect: Dialect,
    extra_headers: Mapping[str, str],
    outcome: Outcome,
    tee: bool,
) -> web.StreamResponse:
    headers = client_response_headers(CIMultiDict(upstream.headers))
    headers.update(extra_headers)
    response = web.StreamResponse(status=upstream.status, reason=upstream.reason, headers=headers)
    if upstream.content_length is not None and "chunked" not in upstream.headers.get("Transfer-Encoding", ""):
        response.content_length = upstream.content_length
    copy = _Tee(dialect.name, upstream.headers.get("Content-Type", "")) if tee and upstream.status < 400 else None
    try:
        await response.prepare(request)
        async for chunk in upstream.content.iter_any():
            if copy is not None:
                copy.feed(chunk)
            await response.write(chunk)
        await response.write_eof()
    except (ConnectionResetError, aiohttp.ClientConnectionResetError):
        outcome.client_gone = True
        upstream.close()
    except (aiohttp.ClientError, TimeoutError) as exc:
        outcome.upstream_failed = f"{type(exc).__name__}: {exc}"
        log.warning("upstream stream broke after %s: %s", upstream.url.origin(), outcome.upstream_failed)
        upstream.close()
        _abort(request)
    except asyncio.CancelledError:
        outcome.client_gone = True
        upstream.close()
        raise
    finally:
        if copy is not None:
            outcome.reply = copy.finish()
    return response


def _abort(request: web.Request) -> None:
    """Close the client connection where the upstream broke (so it sees a truncated response)."""
    transport = request.transport
    if transport is not None:
        transport.close()


def _origin(url: str) -> str:
    parts = url.split("/", 3)
    return "/".join(parts[:3])
