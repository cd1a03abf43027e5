"""The LLM API routes: the interception core around a forward with a tee, plus plain pass-through.

Memory routes are the paths of tap.intercept.dialects.registry.MEMORY_ROUTES (Anthropic `POST /v1/messages`,
OpenAI `POST /v1/chat/completions`, Ollama `POST /api/chat` and `POST /api/generate`); each runs
`Interceptor.before` → forward (teeing the reply, settling it before its last chunk reaches the
client) → `Interceptor.after`. The policy (scope, conversation, recall under the deadline,
injection, degraded headers, capture) lives in tap.intercept.core; this module only adapts aiohttp to
it. Token-counting routes (tap.intercept.dialects.registry.COUNT_ROUTES: Anthropic
`POST /v1/messages/count_tokens`) forward the body with the block the memory route would inject
for the same request (the same human turn gets the same bytes, tap.intercept.core), so the count is the
truth; they are never captured. Every other path of those APIs passes through unchanged
(`/v1/models`, `/api/tags`, …), addressed by `passthrough_dialect`, and so does Ollama's root
(`GET /` and `HEAD /`: the ollama CLI probes it before every command).

Every request gets `x-tap-request-id` and leaves one log line when it is over
(`Interceptor.finish`; tap.recall.why); memory and count routes also leave a record for `tap why`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

from proxy.context import ServerContext, context_key, session_key
from proxy.forward import Outcome, error_response, forward
from tap.intercept.core import BadRequest, Interception
from tap.intercept.dialects import Dialect, Reply
from tap.intercept.dialects.registry import (
    COUNT_ROUTES,
    MEMORY_ROUTES,
    OLLAMA_CHAT,
    PASSTHROUGH_PREFIXES,
    passthrough_dialect,
)
from tap.recall.why import REQUEST_ID_HEADER
from tap.runtime.priority import HOT_PATH

log = logging.getLogger(__name__)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _url(ctx: ServerContext, dialect: Dialect, request: web.Request) -> str:
    up = ctx.config.upstream
    base = {"anthropic": up.anthropic, "openai": up.openai, "ollama": up.ollama}[dialect.upstream]
    return base.rstrip("/") + request.rel_url.raw_path_qs


async def _read_body(request: web.Request, dialect: Dialect) -> bytes | web.Response:
    try:
        return await request.read()
    except web.HTTPRequestEntityTooLarge as exc:
        return error_response(dialect, 413, f"request body too large ({exc.text}); see [proxy] max_body_mb", {})


async def memory_route(request: web.Request, dialect: Dialect) -> web.StreamResponse:
    """Intercept (recall, inject), forward with a tee, settle and capture."""
    return await _intercepted(request, dialect, dialect.name, capture=True)


async def _intercepted(request: web.Request, dialect: Dialect, metric: str, *, capture: bool) -> web.StreamResponse:
    """Intercept the request (counted under `metric`), forward it and, with `capture`, tee the reply
    to settle and capture the exchange."""
    ctx = request.app[context_key]
    ctx.metrics.request(metric)
    body = await _read_body(request, dialect)
    if isinstance(body, web.Response):
        return body
    try:
        before = await ctx.interceptor.before(dialect, request.headers, body, method=request.method, path=request.path)
    except BadRequest as exc:
        return error_response(dialect, 400, str(exc), {})
    intercepted = before.context if capture else None
    outcome = Outcome()
    try:
        response, _ = await forward(
            request,
            session=request.app[session_key],
            url=_url(ctx, dialect, request),
            body=body if before.body is None else before.body,
            dialect=dialect,
            extra_headers=before.headers,
            tee=intercepted is not None,
            on_reply=None if intercepted is None else _settler(ctx, intercepted),
            outcome=outcome,
        )
    except asyncio.CancelledError:  # the client left: the upstream request is cancelled; what arrived is kept
        if intercepted is not None:
            ctx.interceptor.after(intercepted, outcome.reply, status=outcome.status, client_gone=True)
        else:
            ctx.interceptor.finish(before.note, outcome.status)
        raise
    if intercepted is not None:
        ctx.interceptor.after(
            intercepted,
            outcome.reply,
            status=outcome.status,
            client_gone=outcome.client_gone,
            upstream_failed=outcome.upstream_failed,
        )
    else:
        ctx.interceptor.finish(before.note, outcome.status)
    return response


def _settler(ctx: ServerContext, intercepted: Interception) -> Callable[[Reply], None]:
    def settle(reply: Reply) -> None:
        ctx.interceptor.settle(intercepted, reply)

    return settle


async def count_route(request: web.Request, dialect: Dialect) -> web.StreamResponse:
    """Count tokens of the request as its memory route would send it (block injected, no capture)."""
    return await _intercepted(request, dialect, f"{dialect.name}-count", capture=False)


async def passthrough(request: web.Request) -> web.StreamResponse:
    """Forward unchanged (no recall, no capture) to the upstream of the path's dialect."""
    return await _passthrough(request, passthrough_dialect(request.path, request.headers))


async def ollama_root(request: web.Request) -> web.StreamResponse:
    """`GET /` and `HEAD /`: Ollama's "is it running" probe, forwarded to the Ollama upstream."""
    return await _passthrough(request, OLLAMA_CHAT)


async def _passthrough(request: web.Request, dialect: Dialect) -> web.StreamResponse:
    ctx = request.app[context_key]
    ctx.metrics.request(f"{dialect.name}-passthrough")
    body = await _read_body(request, dialect)
    if isinstance(body, web.Response):
        return body
    note = ctx.interceptor.note(request.method, request.path, keep=False)  # an id and a log line, no record
    response, outcome = await forward(
        request,
        session=request.app[session_key],
        url=_url(ctx, dialect, request),
        body=body,
        dialect=dialect,
        extra_headers={REQUEST_ID_HEADER: note.request_id},
        tee=False,
    )
    ctx.interceptor.finish(note, outcome.status)
    return response


def _memory_handler(dialect: Dialect) -> Handler:
    async def handle(request: web.Request) -> web.StreamResponse:
        return await memory_route(request, dialect)

    handle.__doc__ = f"{dialect.name}: recall, inject, forward, capture."
    return handle


def _count_handler(dialect: Dialect) -> Handler:
    async def handle(request: web.Request) -> web.StreamResponse:
        return await count_route(request, dialect)

    handle.__doc__ = f"{dialect.name}: count tokens with the memory block injected."
    return handle


def _relaying(handler: Handler) -> Handler:
    """The handler, counted as hot-path work while it runs (tap.runtime.priority.HOT_PATH: background
    writers pause between their batches while there is some)."""

    async def handle(request: web.Request) -> web.StreamResponse:
        with HOT_PATH.serving():
            return await handler(request)

    handle.__doc__ = handler.__doc__
    return handle


def add_proxy_routes(app: web.Application) -> None:
    """Register the LLM API routes (after the admin routes)."""
    for path, dialect in MEMORY_ROUTES.items():
        app.router.add_post(path, _relaying(_memory_handler(dialect)))
    for path, dialect in COUNT_ROUTES.items():
        app.router.add_post(path, _relaying(_count_handler(dialect)))
    app.router.add_get("/", _relaying(ollama_root))  # also HEAD
    for prefix in PASSTHROUGH_PREFIXES:
        app.router.add_route("*", prefix + "{tail:.*}", _relaying(passthrough))
