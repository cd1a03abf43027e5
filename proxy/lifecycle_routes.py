"""Admin routes for living with memory for months: archive/restore, conflicts, consolidation, why.

Shapes (the contract the web page builds on; errors are `{"error": ...}`):
- `POST /tap/memories/{id}/archive`, `POST /tap/memories/{id}/restore` → the memory;
- `GET /tap/conflicts?scope=` → `{"conflicts": [{"a": memory, "b": memory, "since": float}]}`;
- `POST /tap/conflicts/resolve {"keep": id, "drop": id}` → `{"kept": memory, "superseded": memory}`
  (or `{"keep": id, "drop": id, "both": true}`: both stay, the mark goes →
  `{"kept": memory, "also_kept": memory, "superseded": null}`);
- `POST /tap/consolidate {"scope"?, "dry_run"?}` → `{"merged", "archived", "groups", "dry_run",
  "scopes", "resumed", "archived_memories"}` (on the background executor, after the extraction
  batch in progress);
- `GET /tap/why?limit=N` → `{"requests": [...], "keep", "keep_minutes"}` newest first (and how many
  records the server keeps, for how long: `keep` 0 keeps none); `GET /tap/why/last`,
  `GET /tap/why/{request_id}` → the record with its candidates (404 when unknown or expired).
All under the admin bearer token (proxy.admin.require_token).
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from proxy.admin import _body, _run, _scope_problem, changed_memory, error, json_response
from proxy.context import ServerContext, context_key
from tap.memories.views import memory_view
from tap.recall.why import WhyRecord, explain


async def archive(request: web.Request) -> web.Response:
    """Set a memory aside: listed, restorable, never recalled."""
    return await _change(request, "archive")


async def restore(request: web.Request) -> web.Response:
    """Bring an archived memory back into recall."""
    return await _change(request, "restore")


async def _change(request: web.Request, action: str) -> web.Response:
    ctx: ServerContext = request.app[context_key]
    memory_id = request.match_info["memory_id"]
    change = ctx.memories.archive if action == "archive" else ctx.memories.restore
    return await changed_memory(memory_id, lambda: change(memory_id))


async def conflicts(request: web.Request) -> web.Response:
    """`?scope=` → the unresolved conflicts, newest first."""
    ctx: ServerContext = request.app[context_key]
    scope = request.query.get("scope") or None
    found = await _run(lambda: ctx.memories.conflicts(scope=scope))
    return json_response(
        {"conflicts": [{"a": memory_view(c.a), "b": memory_view(c.b), "since": c.since} for c in found]}
    )


async def resolve(request: web.Request) -> web.Response:
    """`{"keep": id, "drop": id, "both"?: bool}` → the memory kept and the one superseded."""
    ctx: ServerContext = request.app[context_key]
    body = await _body(request)
    keep, drop, both = body.get("keep"), body.get("drop"), body.get("both", False)
    if not isinstance(keep, str) or not isinstance(drop, str) or not keep or not drop or keep == drop:
        return error(400, "`keep` and `drop` must be the ids of the two memories in conflict")
    if not isinstance(both, bool):
        return error(400, "`both` must be true or false")
    try:
        settled = await _run(lambda: ctx.memories.resolve(keep, drop, both=both))
    except KeyError as exc:
        return error(404, f"no memory with id {exc.args[0]}")
    except ValueError as exc:
        return error(400, str(exc))
    return json_response(
        {
            "kept": memory_view(settled.kept),
            "superseded": None if settled.superseded is None else memory_view(settled.superseded),
            "also_kept": None if settled.also_kept is None else memory_view(settled.also_kept),
        }
    )


async def consolidate(request: web.Request) -> web.Response:
    """`{"scope"?, "dry_run"?}` → what consolidation merged and archived (or would)."""
    ctx: ServerContext = request.app[context_key]
    body = await _body(request)
    scope, dry_run = body.get("scope"), body.get("dry_run", False)
    problem = "" if scope is None else _scope_problem(scope)
    if problem:
        return error(400, problem)
    if not isinstance(dry_run, bool):
        return error(400, "`dry_run` must be true or false")
    if ctx.consolidation is None:
        return error(503, "consolidation is not available")
    report = await ctx.consolidation.run(scope, dry_run=dry_run)
    return json_response(report)


async def why_list(request: web.Request) -> web.Response:
    """`?limit=N` → the latest requests, newest first, and what the server keeps (`[why] keep`,
    `keep_minutes`)."""
    ctx: ServerContext = request.app[context_key]
    try:
        limit = max(1, min(int(request.query.get("limit", "20")), 10000))
    except ValueError:
        return error(400, "limit must be an integer")
    why = ctx.why
    records = await asyncio.to_thread(why.recent, limit) if why is not None else []  # built on reading
    keep, minutes = (why.config.keep, why.config.keep_minutes) if why is not None else (0, 0.0)
    return json_response({"requests": [r.summary() for r in records], "keep": keep, "keep_minutes": minutes})


async def why_last(request: web.Request) -> web.Response:
    """The newest request's record."""
    ctx: ServerContext = request.app[context_key]
    record = await asyncio.to_thread(ctx.why.last) if ctx.why is not None else None
    if record is None:
        return error(404, "no request recorded yet (records are kept for [why] keep_minutes)")
    return json_response(await _explained(ctx, record))


async def why_one(request: web.Request) -> web.Response:
    """One request's record by its `x-tap-request-id`."""
    ctx: ServerContext = request.app[context_key]
    request_id = request.match_info["request_id"]
    record = await asyncio.to_thread(ctx.why.get, request_id) if ctx.why is not None else None
    if record is None:
        return error(404, f"no record of request {request_id} (unknown, or older than [why] keep_minutes)")
    return json_response(await _explained(ctx, record))


async def _explained(ctx: ServerContext, record: WhyRecord) -> dict[str, Any]:
    search = ctx.inactive_search
    if search is None:
        return record.view()
    min_similarity = ctx.config.recall.min_similarity
    return await _run(  # type: ignore[no-any-return]
        lambda: explain(record, search, lambda m: ctx.recall.weights(m, record.at), min_similarity=min_similarity)
    )


def add_lifecycle_routes(app: web.Application) -> None:
    """Register the routes (before the proxy routes)."""
    app.router.add_post("/tap/memories/{memory_id}/archive", archive)
    app.router.add_post("/tap/memories/{memory_id}/restore", restore)
    app.router.add_get("/tap/conflicts", conflicts)
    app.router.add_post("/tap/conflicts/resolve", resolve)
    app.router.add_post("/tap/consolidate", consolidate)
    app.router.add_get("/tap/why", why_list)
    app.router.add_get("/tap/why/last", why_last)
    app.router.add_get("/tap/why/{request_id}", why_one)
