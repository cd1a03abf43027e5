"""Forward one request upstream and stream the response back byte for byte, teeing a copy.

Invariants:
- upstream bytes reach the client as they arrive, unchanged and unbuffered; the tee
  (tap.intercept.dialects.tee.ReplyTee: the dialect's own parsers) sees the same chunks and never blocks
  forwarding;
- `on_reply` is called once, with the finished reply, *before* the chunk that completes it is
  written to the client (the terminal event of a stream, the last byte of a body of known
  length), else when the response ends; the client's next request can therefore rely on what
  the callback recorded (conversation continuity). A failing callback is logged, never raised;
- an upstream that refuses the connection is a 502 and one that does not answer in time a 504,
  both in the dialect's own error shape; an upstream error *after* the status line went out is
  passed through as sent (the connection is closed where it broke);
- a client that goes away — before the upstream answered or mid-stream — cancels the upstream
  request at once (aiohttp's handler cancellation: tap.wiring.server), so a model stops generating
  for nobody; the outcome says what arrived until then.
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
from tap.intercept.dialects import Dialect, Reply
from tap.intercept.dialects.tee import OnReply, ReplyTee

log = logging.getLogger(__name__)


@dataclass
class Outcome:
    """What happened to one forwarded request."""

    status: int = 0
    reply: Reply = field(default_factory=Reply)
    client_gone: bool = False
    upstream_failed: str = ""


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
    on_reply: OnReply | None = None,
    outcome: Outcome | None = None,
) -> tuple[web.StreamResponse, Outcome]:
    """Send body upstream; stream the answer to the client; return the response and outcome
    (`outcome`, when given, is filled as it goes: a caller cancelled because its client left still
    reads what arrived)."""
    outcome = outcome or Outcome()
    try:
        upstream = await session.request(
            request.method,
            url,
            data=None if request.method == "HEAD" else body if body or request.method != "GET" else None,
            headers=upstream_request_headers(CIMultiDict(request.headers)),
            allow_redirects=False,
        )
    except asyncio.CancelledError:
        outcome.client_gone = True  # the client left while the upstream had not answered: it is cancelled
        raise
    except TimeoutError:
        outcome.status = 504
        return error_response(dialect, 504, f"upstream {_origin(url)} did not answer in time", extra_headers), outcome
    except aiohttp.ClientError as exc:
        outcome.status = 502
        message = f"upstream {_origin(url)} is unreachable: {type(exc).__name__}"
        return error_response(dialect, 502, message, extra_headers), outcome
    async with upstream:
        outcome.status = upstream.status
        copy = None
        if tee and upstream.status < 400:
            copy = ReplyTee(dialect, upstream.headers.get("Content-Type", ""), _body_length(upstream), on_reply)
        return await _relay(request, upstream, extra_headers, outcome, copy), outcome


def _body_length(upstream: aiohttp.ClientResponse) -> int | None:
    """The body's length when the upstream declared it (not chunked)."""
    if upstream.content_length is not None and "chunked" not in upstream.headers.get("Transfer-Encoding", ""):
        return upstream.content_length
    return None


async def _relay(
    request: web.Request,
    upstream: aiohttp.ClientResponse,
    extra_headers: Mapping[str, str],
    outcome: Outcome,
    copy: ReplyTee | None,
) -> web.StreamResponse:
    headers = client_response_headers(CIMultiDict(upstream.headers))
    headers.update(extra_headers)
    response = web.StreamResponse(status=upstream.status, reason=upstream.reason, headers=headers)
    length = _body_length(upstream)
    if length is not None:
        response.content_length = length
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
