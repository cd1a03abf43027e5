"""The admin API on tap's port (docs/architecture.md, Interfaces): health, recall, memories, scopes,
export/import, stats, status; the web page's routes are in proxy.ui.

Everything but `GET /tap/health` needs `Authorization: Bearer <token>` (constant-time compare): the
admin token, or the token of a web page session opened with a one-time code (proxy.signin).
Blocking store work runs in a worker thread so the proxy's event loop never stalls.
"""

from __future__ import annotations

import asyncio
import hmac
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import msgspec
from aiohttp import web

from proxy.context import ServerContext, context_key
from proxy.signin import CODE_S, SESSION_IDLE_S, SESSION_MAX_S, SignIns
from proxy.ui import add_ui_routes
from tap.errors import TapError
from tap.ingest.entry import parse_event
from tap.jsonbody import decode
from tap.memories.history import history_view
from tap.memories.views import memory_view, search_view
from tap.records import KINDS, Memory
from tap.runtime.diskspace import out_of_space
from tap.runtime.health import check_health
from tap.validate import MAX_SCOPE, text_problem

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
signins_key = web.AppKey("tap_signins", SignIns)


def json_response(value: Any, status: int = 200) -> web.Response:
    """A JSON response encoded with msgspec."""
    return web.Response(body=msgspec.json.encode(value), status=status, content_type="application/json")


def error(status: int, message: str) -> web.Response:
    """`{"error": message}` with a status."""
    return json_response({"error": message}, status)


OPEN_PATHS = frozenset({"/tap/health", "/tap/session"})  # the session route checks its code itself


def bearer(request: web.Request) -> str:
    """The bearer token the request carries ("" when none)."""
    scheme, _, given = request.headers.get("Authorization", "").strip().partition(" ")
    # the scheme is case-insensitive (RFC 9110 §11.1): "Bearer", "bearer" and "BEARER" all work
    return given.strip() if scheme.lower() == "bearer" else ""


def authorized(request: web.Request, *, session: bool = True) -> bool:
    """Whether the request carries the admin bearer token (constant-time compare) or, unless
    `session` is False, the token of a web page session (proxy.signin)."""
    ctx = request.app[context_key]
    given = bearer(request)
    if not given:
        return False
    if hmac.compare_digest(given.encode("utf-8", "surrogateescape"), ctx.admin_token.encode()):
        return True
    return session and request.app[signins_key].valid(given)


@web.middleware
async def require_token(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Reject admin requests (and the MCP endpoint's) without the right bearer token (health and the
    sign-in code exchange are open)."""
    needs_token = (request.path.startswith("/tap/") and request.path not in OPEN_PATHS) or request.path == "/mcp"
    if needs_token and not authorized(request):
        return error(401, "missing or wrong bearer token (see <data dir>/admin-token, or run `tap ui`)")
    return await handler(request)


async def signin_code(request: web.Request) -> web.Response:
    """A one-time code that signs the web page in (`tap ui`); the admin token only, not a session."""
    if not authorized(request, session=False):
        return error(403, "sign-in codes are handed out for the admin token only")
    code = request.app[signins_key].new_code()
    return json_response({"code": code, "expires_in_s": CODE_S})


async def session(request: web.Request) -> web.Response:
    """`POST {"code"}` → a session token for the web page; `DELETE` (with the session) signs it out."""
    signins = request.app[signins_key]
    if request.method == "DELETE":
        signins.end(bearer(request))
        return json_response({"signed_out": True})
    body = await _body(request)
    code = body.get("code")
    token = signins.open_session(code) if isinstance(code, str) and code else None
    if token is None:
        return error(
            401, "this sign-in code is unknown, used or expired (codes work once, for a minute): run `tap ui` again"
        )
    return json_response({"token": token, "idle_expires_s": SESSION_IDLE_S, "expires_s": SESSION_MAX_S})


async def _body(request: web.Request) -> dict[str, Any]:
    try:
        data: Any = decode(await request.read())
    except ValueError as exc:
        raise web.HTTPBadRequest(
            text=msgspec.json.encode({"error": str(exc)}).decode(),
            content_type="application/json",
        ) from exc
    if not isinstance(data, dict):
        raise web.HTTPBadRequest(text='{"error": "expected a JSON object"}', content_type="application/json")
    return data


async def _run(fn: Callable[[], Any]) -> Any:
    return await asyncio.to_thread(fn)


async def changed_memory(memory_id: str, change: Callable[[], Memory]) -> web.Response:
    """Run a change of one memory in a worker thread → its new record; 404 for an unknown id, 400
    when the change is refused."""
    try:
        memory = await _run(change)
    except KeyError:
        return error(404, f"no memory with id {memory_id}")
    except ValueError as exc:
        return error(400, str(exc))
    return json_response(memory_view(memory))


async def health(request: web.Request) -> web.Response:
    """Liveness and the state of the store, the embedder, the extractor, the disk and capture
    (tap.runtime.health); 503 when the store or the embedder does not answer. Open to anyone, so
    it names no path: where the store lives is shown with the admin token only."""
    ctx: ServerContext = request.app[context_key]
    extraction = ctx.metrics.sections.get("extraction")
    report = await check_health(
        ctx.memories.store,
        ctx.memories.embedder,
        extraction,
        space=ctx.space,
        capture=ctx.capture.status if ctx.capture is not None else None,
        store_problem=ctx.store_problem,
    )
    doc: dict[str, Any] = {"version": ctx.version, "store": ctx.store_location, "embedder": ctx.embedder_id, **report}
    if not authorized(request):  # errors may quote a path: shown as <data dir>
        doc["store"] = "chroma server" if ctx.config.store.url else "embedded"
        if not ctx.config.store.url and ctx.store_location:
            data_dir = str(Path(ctx.store_location).parent)
            doc = msgspec.json.decode(msgspec.json.encode(doc).replace(data_dir.encode(), b"<data dir>"))
    return json_response(doc, 200 if report["status"] != "down" else 503)


async def recall(request: web.Request) -> web.Response:
    """`{"text", "scope"?, "budget_tokens"?}` → the block tap would inject."""
    ctx: ServerContext = request.app[context_key]
    body = await _body(request)
    text, scope = body.get("text"), body.get("scope") or "default"
    if not isinstance(text, str) or not isinstance(scope, str):
        return error(400, "`text` (string) is required; `scope` must be a string")
    budget = body.get("budget_tokens")
    if budget is not None and (not isinstance(budget, int) or not 50 <= budget <= 8000):
        return error(400, "`budget_tokens` must be an integer from 50 to 8000")
    view = await _run(lambda: ctx.memories.recall_json(text, scope=scope, budget_tokens=budget))
    return json_response(view)


_LAYERS: dict[str, bool | None] = {"all": None, "memories": False, "excerpts": True}


_ARCHIVED: dict[str, bool | None] = {"all": None, "0": False, "1": True}


async def list_memories(request: web.Request) -> web.Response:
    """`?scope=&limit=&offset=&all=1&layer=all|memories|excerpts&archived=0|1|all` → memories newest
    first (`archived`: all lists archived memories beside the others, 1 only them, 0 none)."""
    ctx: ServerContext = request.app[context_key]
    q = request.query
    try:
        limit, offset = int(q.get("limit", "50")), int(q.get("offset", "0"))
    except ValueError:
        return error(400, "limit and offset must be integers")
    layer = q.get("layer", "all")
    if layer not in _LAYERS:
        return error(400, f"layer must be one of {', '.join(_LAYERS)}")
    archived_arg = q.get("archived", "all")
    if archived_arg not in _ARCHIVED:
        return error(400, "archived must be 0, 1 or all")
    limit, offset = max(1, min(limit, 100000)), max(0, offset)
    scope, all_versions, excerpts = q.get("scope") or None, q.get("all") == "1", _LAYERS[layer]
    archived = _ARCHIVED[archived_arg]

    def page() -> tuple[list[Memory], int]:
        found = ctx.memories.list_memories(
            scope=scope,
            limit=limit,
            offset=offset,
            all_versions=all_versions,
            excerpts=excerpts,
            archived=archived,
        )
        return found, ctx.memories.count_memories(
            scope=scope, all_versions=all_versions, excerpts=excerpts, archived=archived
        )

    found, total = await _run(page)
    views = [memory_view(m) for m in found]
    return json_response({"memories": views, "total": total, "offset": offset, "limit": limit})


async def scopes(request: web.Request) -> web.Response:
    """Every scope with active memories → `{"scopes": [{"scope", "memories", "excerpts"}]}`."""
    ctx: ServerContext = request.app[context_key]
    return json_response({"scopes": await _run(ctx.memories.scopes)})


async def search_memories(request: web.Request) -> web.Response:
    """`?q=&scope=&limit=&layer=all|memories|excerpts&archived=0|1|all&all=1` → hybrid-ranked
    memories (every scope when `scope` is absent), filtered as the listing is, except that
    `archived` defaults to 0: a search finds what recall can use unless told otherwise."""
    ctx: ServerContext = request.app[context_key]
    q = request.query
    query, scope = q.get("q", ""), q.get("scope") or None
    try:
        limit = int(q.get("limit", "20"))
    except ValueError:
        return error(400, "limit must be an integer")
    layer, archived_arg = q.get("layer", "all"), q.get("archived", "0")
    if layer not in _LAYERS:
        return error(400, f"layer must be one of {', '.join(_LAYERS)}")
    if archived_arg not in _ARCHIVED:
        return error(400, "archived must be 0, 1 or all")
    results = await _run(
        lambda: ctx.memories.search(
            query,
            scope=scope,
            limit=max(1, min(limit, 500)),
            excerpts=_LAYERS[layer],
            archived=_ARCHIVED[archived_arg],
            all_versions=q.get("all") == "1",
        )
    )
    return json_response({"results": search_view(results)})


async def add_memory(request: web.Request) -> web.Response:
    """`{"scope", "content", "kind"?, "importance"?, "tags"?}` → 201 with the new memory."""
    ctx: ServerContext = request.app[context_key]
    body = await _body(request)
    problem = _check_fields(body, require_content=True)
    if problem:
        return error(400, problem)
    fields = {k: body[k] for k in ("kind", "importance", "tags") if k in body}
    try:
        memory = await _run(
            lambda: ctx.memories.add(scope=body.get("scope") or "default", content=body["content"], **fields)
        )
    except ValueError as exc:
        return error(400, str(exc))
    return json_response(memory_view(memory), 201)


def _check_fields(body: dict[str, Any], *, require_content: bool) -> str:
    content = body.get("content")
    if (require_content or content is not None) and (not isinstance(content, str) or not content.strip()):
        return "`content` must be a non-empty string"
    if "scope" in body:
        problem = _scope_problem(body["scope"])
        if problem:
            return problem
    if "kind" in body and body["kind"] not in KINDS:
        return f"`kind` must be one of {', '.join(KINDS)}"
    if "importance" in body:
        importance = body["importance"]
        if not isinstance(importance, int) or isinstance(importance, bool) or not 1 <= importance <= 5:
            return "`importance` must be an integer from 1 to 5"
    if "tags" in body:
        tags = body["tags"]
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            return "`tags` must be a list of strings"
    return ""


def _scope_problem(scope: object) -> str:
    if not isinstance(scope, str):
        return "`scope` must be a string"
    return text_problem("`scope`", scope, MAX_SCOPE)


async def show_memory(request: web.Request) -> web.Response:
    """The memory, its whole version chain, and its `history`: every version oldest first with
    `current` and the source `turns` still kept (tap.memories.history)."""
    ctx: ServerContext = request.app[context_key]
    memory_id = request.match_info["memory_id"]
    chain, turns = await _run(lambda: ctx.memories.history(memory_id))
    if not chain:
        return error(404, f"no memory with id {memory_id}")
    current = next(m for m in chain if m.id == memory_id)
    return json_response(
        {
            "memory": memory_view(current),
            "chain": [memory_view(m) for m in chain],
            "history": history_view(chain, turns),
        }
    )


async def edit_memory(request: web.Request) -> web.Response:
    """`{"content"?, "kind"?, "importance"?, "tags"?}` → the new version."""
    ctx: ServerContext = request.app[context_key]
    memory_id = request.match_info["memory_id"]
    body = await _body(request)
    problem = _check_fields(body, require_content=False)
    if problem:
        return error(400, problem)
    fields = {k: body.get(k) for k in ("content", "kind", "importance", "tags")}
    return await changed_memory(memory_id, lambda: ctx.memories.edit(memory_id, **fields))


async def delete_memory(request: web.Request) -> web.Response:
    """Delete the memory, its versions and its source turns → `{"deleted", "excerpts", "source_turns"}`."""
    ctx: ServerContext = request.app[context_key]
    memory_id = request.match_info["memory_id"]
    forgotten = await _run(lambda: ctx.memories.forget_memory(memory_id))
    if not forgotten.deleted:
        return error(404, f"no memory with id {memory_id}")
    return json_response(forgotten)


async def forget_scope(request: web.Request) -> web.Response:
    """`{"scope"}` → everything tap keeps of the scope is deleted, in every file → `{"scope", "removed"}`."""
    ctx: ServerContext = request.app[context_key]
    body = await _body(request)
    scope = body.get("scope")
    problem = _scope_problem(scope)
    if problem:
        return error(400, problem)
    assert isinstance(scope, str)
    removed = await _run(lambda: ctx.memories.erase_scope(scope))
    return json_response({"scope": scope, "removed": removed})


async def extract_retry(request: web.Request) -> web.Response:
    """Requeue every dead-lettered chunk (`tap extract retry` while the server runs) → `{"requeued"}`."""
    ctx: ServerContext = request.app[context_key]
    try:
        requeued = await _run(ctx.memories.requeue_dead)
    except ValueError as exc:
        return error(503, str(exc))
    return json_response({"requeued": requeued})


async def export(request: web.Request) -> web.Response:
    """Whole records as JSONL."""
    ctx: ServerContext = request.app[context_key]
    scope = request.query.get("scope") or None
    body = await _run(lambda: b"".join(ctx.memories.export(scope=scope)))
    return web.Response(body=body, content_type="application/x-ndjson")


async def import_(request: web.Request) -> web.Response:
    """A JSONL body of records → the import report."""
    ctx: ServerContext = request.app[context_key]
    lines = (await request.read()).splitlines()
    report = await _run(lambda: ctx.memories.import_lines(lines))
    return json_response(report)


async def ingest(request: web.Request) -> web.Response:
    """`{"scope", "conversation", "source", "messages": [...]}` → 202 with the new turns queued."""
    ctx: ServerContext = request.app[context_key]
    if ctx.ingest is None:
        return error(503, "ingestion is not available")
    try:
        event = parse_event(await request.read())
    except ValueError as exc:
        return error(400, str(exc))
    queued = await ctx.ingest(event)
    return json_response({"queued": queued, "messages": len(event.messages)}, 202)


async def stats(request: web.Request) -> web.Response:
    """Counts by scope and kind and the store size."""
    ctx: ServerContext = request.app[context_key]
    return json_response(await _run(ctx.memories.stats))


async def status(request: web.Request) -> web.Response:
    """Uptime, request and degradation counters, recall latency, queue depth, cost."""
    ctx: ServerContext = request.app[context_key]
    return json_response(await _run(ctx.status))


@web.middleware
async def tap_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Failures of the store, the embedder or the data dir's databases → the API's error shape
    (admin routes only): out of space → 507 Insufficient Storage, anything else → 503, never a bare
    500."""
    try:
        return await handler(request)
    except (TapError, sqlite3.Error, OSError) as exc:
        if not request.path.startswith("/tap/") or isinstance(exc, ConnectionError):
            raise
        ctx: ServerContext = request.app[context_key]
        if out_of_space(exc):
            message = ctx.space.problem() if ctx.space is not None else ""
            if ctx.space is not None:
                ctx.space.note(message or f"out of space: {exc}")
            return error(507, message or f"out of space in the data dir: {exc}")
        if isinstance(exc, TapError):
            return error(503, str(exc))
        return error(503, f"the data dir's database failed: {type(exc).__name__}: {exc}")


def add_admin_routes(app: web.Application) -> None:
    """Register the admin API and the web page on the app."""
    app[signins_key] = SignIns()
    add_ui_routes(app)
    app.router.add_get("/tap/health", health)
    app.router.add_post("/tap/signin", signin_code)
    app.router.add_post("/tap/session", session)
    app.router.add_delete("/tap/session", session)
    app.router.add_post("/tap/recall", recall)
    app.router.add_get("/tap/memories", list_memories)
    app.router.add_post("/tap/memories", add_memory)
    app.router.add_get("/tap/memories/search", search_memories)
    app.router.add_get("/tap/scopes", scopes)
    app.router.add_get("/tap/memories/{memory_id}", show_memory)
    app.router.add_patch("/tap/memories/{memory_id}", edit_memory)
    app.router.add_delete("/tap/memories/{memory_id}", delete_memory)
    app.router.add_get("/tap/export", export)
    app.router.add_post("/tap/import", import_)
    app.router.add_post("/tap/ingest", ingest)
    app.router.add_post("/tap/forget", forget_scope)
    app.router.add_post("/tap/extract/retry", extract_retry)
    app.router.add_get("/tap/stats", stats)
    app.router.add_get("/tap/status", status)
