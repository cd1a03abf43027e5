"""The LLM API routes: recall → inject → forward → capture, plus plain pass-through.

Memory routes: Anthropic `POST /v1/messages`, OpenAI `POST /v1/chat/completions`, Ollama
`POST /api/chat` and `POST /api/generate`. Every other path of those APIs passes through
unchanged (`/v1/messages/count_tokens`, `/v1/models`, `/api/tags`, …); `/v1/*` goes to the
Anthropic upstream when the client sends `anthropic-version`, else to the OpenAI upstream.

Per request (DESIGN.md §5): `x-tap-no-memory: 1` disables recall and capture; recall runs under
the hard deadline and any failure forwards the request unchanged with `x-tap-degraded: <why>`;
the response carries `x-tap-recalled` and `x-tap-recall-ms`; capture runs after the response,
in the background.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from aiohttp import web

from proxy.context import ProxyContext, context_key, session_key
from proxy.forward import Outcome, error_response, forward
from tap.capture import Exchange
from tap.dialects import ANTHROPIC, OLLAMA_CHAT, OLLAMA_GENERATE, OPENAI, Dialect, JsonObject
from tap.scopes import resolve_conversation, resolve_scope, turn_key
from tap.tasks import create_task

log = logging.getLogger(__name__)
TRUE = ("1", "true", "yes", "on")


def _upstream(ctx: ProxyContext, dialect: Dialect) -> str:
    up = ctx.config.upstream
    base = {"anthropic": up.anthropic, "openai": up.openai}.get(dialect.name, up.ollama)
    return base.rstrip("/")


def _url(ctx: ProxyContext, dialect: Dialect, request: web.Request) -> str:
    return _upstream(ctx, dialect) + request.rel_url.raw_path_qs


@dataclass
class _Recall:
    """What recall did for one request."""

    body: bytes
    headers: dict[str, str]
    conversation: str = ""
    turn_key: str = ""


async def _read_body(request: web.Request, dialect: Dialect) -> bytes | web.Response:
    try:
        return await request.read()
    except web.HTTPRequestEntityTooLarge as exc:
        return error_response(dialect, 413, f"request body too large ({exc.text}); see [proxy] max_body_mb", {})


async def _recall(
    ctx: ProxyContext, dialect: Dialect, req: JsonObject, scope: str, conversation: str, query: str
) -> _Recall:
    messages = req.get("messages")
    key = turn_key(conversation, len(messages) if isinstance(messages, list) else 0, query)
    out = _Recall(body=b"", headers={"x-tap-recalled": "0"}, conversation=conversation, turn_key=key)
    try:
        result = await ctx.recall.recall_async(query, scope=scope, conversation=conversation, turn_key=key)
    except TimeoutError:
        out.headers["x-tap-degraded"] = f"recall-deadline-{ctx.config.recall.deadline_ms}ms"
        ctx.metrics.degrade("deadline", f"recall took longer than {ctx.config.recall.deadline_ms} ms")
        return out
    except Exception as exc:  # any store/embedder failure: never fail the user's request
        out.headers["x-tap-degraded"] = "recall-error"
        ctx.metrics.degrade("recall-error", f"{type(exc).__name__}: {exc}")
        return out
    ctx.metrics.recall_done(result.elapsed_ms, len(result.memories))
    out.headers["x-tap-recall-ms"] = f"{result.elapsed_ms:.1f}"
    out.headers["x-tap-recalled"] = str(len(result.memories))
    if result.block:
        out.body = dialect.encode(dialect.inject(req, result.block))
    return out


async def memory_route(request: web.Request, dialect: Dialect) -> web.StreamResponse:
    """Recall, inject, forward with a tee, capture."""
    ctx = request.app[context_key]
    ctx.metrics.request(dialect.name)
    started = time.time()
    body = await _read_body(request, dialect)
    if isinstance(body, web.Response):
        return body
    if request.headers.get("x-tap-no-memory", "").lower() in TRUE:
        return await _unchanged(request, dialect, body, {"x-tap-recalled": "0"})
    try:
        req = dialect.parse_request(body)
    except ValueError as exc:
        ctx.metrics.degrade("bad-request-body", str(exc))
        return await _unchanged(request, dialect, body, {"x-tap-degraded": "unparsable-request"})
    try:
        scope = resolve_scope(request.headers, by_api_key=ctx.config.proxy.scope_by_api_key)
    except ValueError as exc:
        return error_response(dialect, 400, str(exc), {})
    conversation = resolve_conversation(request.headers, scope, dialect.first_user_text(req))
    query = dialect.latest_user_text(req)
    recalled = _Recall(body=b"", headers={"x-tap-recalled": "0"})
    if query and ctx.config.proxy.inject:
        recalled = await _recall(ctx, dialect, req, scope, conversation, query)
    response, outcome = await forward(
        request,
        session=request.app[session_key],
        url=_url(ctx, dialect, request),
        body=recalled.body or body,
        dialect=dialect,
        extra_headers=recalled.headers,
        tee=bool(query),
    )
    if query and ctx.config.proxy.capture and ctx.capture is not None and _worth_capturing(outcome):
        exchange = _exchange(dialect, req, scope, conversation, query, outcome, started, recalled.turn_key)
        create_task(ctx.capture.record(exchange), name=f"capture-{conversation}")
    return response


def _worth_capturing(outcome: Outcome) -> bool:
    return 200 <= outcome.status < 300 or bool(outcome.reply.text)


def _exchange(
    dialect: Dialect,
    req: JsonObject,
    scope: str,
    conversation: str,
    query: str,
    outcome: Outcome,
    started: float,
    key: str,
) -> Exchange:
    reply = outcome.reply
    return Exchange(
        scope=scope,
        conversation=conversation,
        dialect=dialect.name,
        model=reply.model or dialect.model_of(req),
        user_turn_id=key,
        user_text=query,
        reply_text=reply.text,
        usage=reply.usage,
        status=outcome.status,
        complete=reply.complete and not outcome.client_gone,
        error=reply.error or outcome.upstream_failed or ("client disconnected" if outcome.client_gone else ""),
        started_at=started,
        finished_at=time.time(),
    )


async def _unchanged(
    request: web.Request, dialect: Dialect, body: bytes, headers: dict[str, str]
) -> web.StreamResponse:
    """Forward the body as it came (no recall, no capture)."""
    ctx = request.app[context_key]
    response, _ = await forward(
        request,
        session=request.app[session_key],
        url=_url(ctx, dialect, request),
        body=body,
        dialect=dialect,
        extra_headers=headers,
        tee=False,
    )
    return response


async def passthrough(request: web.Request, dialect: Dialect) -> web.StreamResponse:
    """Forward unchanged (no recall, no capture)."""
    request.app[context_key].metrics.request(f"{dialect.name}-passthrough")
    body = await _read_body(request, dialect)
    if isinstance(body, web.Response):
        return body
    return await _unchanged(request, dialect, body, {})


async def anthropic_messages(request: web.Request) -> web.StreamResponse:
    """Anthropic Messages API."""
    return await memory_route(request, ANTHROPIC)


async def openai_chat(request: web.Request) -> web.StreamResponse:
    """OpenAI Chat Completions."""
    return await memory_route(request, OPENAI)


async def ollama_chat(request: web.Request) -> web.StreamResponse:
    """Ollama /api/chat."""
    return await memory_route(request, OLLAMA_CHAT)


async def ollama_generate(request: web.Request) -> web.StreamResponse:
    """Ollama /api/generate."""
    return await memory_route(request, OLLAMA_GENERATE)


async def v1_passthrough(request: web.Request) -> web.StreamResponse:
    """Any other /v1 path: Anthropic when the client speaks it, else OpenAI."""
    anthropic = "anthropic-version" in request.headers or request.path.startswith("/v1/messages")
    return await passthrough(request, ANTHROPIC if anthropic else OPENAI)


async def ollama_passthrough(request: web.Request) -> web.StreamResponse:
    """Any other Ollama path."""
    return await passthrough(request, OLLAMA_CHAT)


def add_proxy_routes(app: web.Application) -> None:
    """Register the LLM API routes (after the admin routes)."""
    app.router.add_post("/v1/messages", anthropic_messages)
    app.router.add_post("/v1/chat/completions", openai_chat)
    app.router.add_post("/api/chat", ollama_chat)
    app.router.add_post("/api/generate", ollama_generate)
    app.router.add_route("*", "/v1/{tail:.*}", v1_passthrough)
    app.router.add_route("*", "/api/{tail:.*}", ollama_passthrough)
