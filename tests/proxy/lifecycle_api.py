"""A stand-in for the lifecycle admin API (archive, conflicts, why-injected: the contract shared with
the lifecycle work, /work/notes/lifecycle_api_contract.md) on 127.0.0.1:0, serving the real /ui files.

The real endpoints are built on another branch; this server answers them in the contract's shapes
from a few fixed records, and logs the writes, so the page's views for them can be driven in a
browser before the two branches meet. It runs its own event loop in a thread (the browser tests
use Playwright's synchronous API).
"""

from __future__ import annotations

import asyncio
import copy
import threading
from typing import Any

from aiohttp import web

from proxy.ui import add_ui_routes

TOKEN = "lifecycle-token"
NOW = 1_714_564_800.0


def memory(memory_id: str, content: str, **fields: Any) -> dict[str, Any]:
    """A memory JSON as tap.views.memory_view gives it, with the lifecycle fields."""
    base: dict[str, Any] = {
        "id": memory_id,
        "scope": "ana",
        "content": content,
        "kind": "fact",
        "importance": 3,
        "tags": [],
        "source": "proxy",
        "conversation": "c1",
        "sources": ["t1"],
        "created_at": NOW,
        "updated_at": NOW,
        "valid_from": NOW,
        "supersedes": "",
        "superseded_by": "",
        "access_count": 0,
        "last_accessed": 0.0,
        "embedder": "test",
        "slot": "",
        "slot_part": "",
        "slot_value": "",
        "context": "",
        "archived": False,
        "archived_at": 0.0,
        "conflicts_with": [],
    }
    return base | fields


class LifecycleApi:
    """`with LifecycleApi() as api:` → api.url; api.writes lists the POSTs it received."""

    def __init__(self) -> None:
        self.memories = {
            "m_lisbon": memory("m_lisbon", "Ana lives in Lisbon", conflicts_with=["m_porto"]),
            "m_porto": memory("m_porto", "Ana lives in Porto", created_at=NOW - 86400, conflicts_with=["m_lisbon"]),
            "m_tea": memory("m_tea", "Ana drinks green tea", kind="preference"),
            "m_old": memory("m_old", "Ana had a red bicycle", archived=True, archived_at=NOW),
        }
        self.resolved = False
        self.writes: list[tuple[str, Any]] = []
        self.url = ""
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    def _app(self) -> web.Application:
        app = web.Application()
        add_ui_routes(app)
        r = app.router
        r.add_get("/tap/scopes", self.scopes)
        r.add_get("/tap/memories", self.listing)
        r.add_get("/tap/memories/{id}", self.show)
        r.add_post("/tap/memories/{id}/{action:archive|restore}", self.archive)
        r.add_get("/tap/conflicts", self.conflicts)
        r.add_post("/tap/conflicts/resolve", self.resolve)
        r.add_get("/tap/why", self.why)
        r.add_get("/tap/why/{id}", self.why_one)
        return app

    @staticmethod
    def _authorised(request: web.Request) -> None:
        if request.headers.get("Authorization") != f"Bearer {TOKEN}":
            raise web.HTTPUnauthorized(
                text='{"error": "missing or wrong bearer token"}', content_type="application/json"
            )

    async def scopes(self, request: web.Request) -> web.Response:
        self._authorised(request)
        active = [m for m in self.memories.values() if not m["archived"]]
        return web.json_response({"scopes": [{"scope": "ana", "memories": len(active), "excerpts": 0}]})

    async def listing(self, request: web.Request) -> web.Response:
        self._authorised(request)
        archived = request.query.get("archived", "0")
        found = [m for m in self.memories.values() if archived == "all" or m["archived"] == (archived == "1")]
        found.sort(key=lambda m: m["created_at"], reverse=True)
        return web.json_response({"memories": found, "total": len(found), "offset": 0, "limit": 50})

    async def show(self, request: web.Request) -> web.Response:
        self._authorised(request)
        current = self.memories.get(request.match_info["id"])
        if current is None:
            raise web.HTTPNotFound(text='{"error": "no memory with that id"}', content_type="application/json")
        older = memory("m_tea0", "Ana drinks coffee", kind="preference", superseded_by=current["id"])
        turns = [{"id": "t1", "role": "user", "text": "I switched from coffee to green tea", "at": NOW}]
        history = [{**older, "current": False, "turns": []}, {**current, "current": True, "turns": turns}]
        return web.json_response({"memory": current, "chain": [older, current], "history": history})

    async def archive(self, request: web.Request) -> web.Response:
        self._authorised(request)
        target = self.memories[request.match_info["id"]]
        action = request.match_info["action"]
        target["archived"] = action == "archive"
        self.writes.append((action, target["id"]))
        return web.json_response(target)

    async def conflicts(self, request: web.Request) -> web.Response:
        self._authorised(request)
        pairs = [] if self.resolved else [{"a": self.memories["m_lisbon"], "b": self.memories["m_porto"], "since": NOW}]
        return web.json_response({"conflicts": pairs})

    async def resolve(self, request: web.Request) -> web.Response:
        self._authorised(request)
        body = await request.json()
        self.writes.append(("resolve", body))
        self.resolved = True
        kept, dropped = self.memories[body["keep"]], self.memories[body["drop"]]
        kept["conflicts_with"], dropped["conflicts_with"] = [], []
        return web.json_response({"kept": kept, "superseded": copy.deepcopy(dropped) | {"superseded_by": kept["id"]}})

    async def why(self, request: web.Request) -> web.Response:
        self._authorised(request)
        row = {
            "request_id": "r_1",
            "at": NOW,
            "method": "POST",
            "path": "/v1/messages",
            "scope": "ana",
            "conversation": "c1",
            "injected": 1,
            "recall_ms": 12.5,
            "degraded": "",
        }
        return web.json_response({"requests": [row]})

    async def why_one(self, request: web.Request) -> web.Response:
        self._authorised(request)
        if request.match_info["id"] != "r_1":
            raise web.HTTPNotFound(text='{"error": "unknown or expired request"}', content_type="application/json")
        candidate = {"kind": "fact", "recency": 0.9, "importance": 3.0}
        return web.json_response(
            {
                "request_id": "r_1",
                "at": NOW,
                "method": "POST",
                "path": "/v1/messages",
                "scope": "ana",
                "conversation": "c1",
                "query": "where does Ana live?",
                "recall_ms": 12.5,
                "degraded": "",
                "upstream_status": 200,
                "duration_ms": 840.0,
                "candidates": [
                    {
                        **candidate,
                        "id": "m_lisbon",
                        "content": "Ana lives in Lisbon",
                        "vector": 0.71,
                        "lexical": 4.2,
                        "score": 0.061,
                        "outcome": "injected",
                    },
                    {
                        **candidate,
                        "id": "m_tea",
                        "content": "Ana drinks green tea",
                        "vector": 0.22,
                        "lexical": None,
                        "score": 0.004,
                        "outcome": "below-threshold",
                    },
                ],
            }
        )

    def __enter__(self) -> LifecycleApi:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=30)
        return self

    async def _start(self) -> None:
        self._runner = web.AppRunner(self._app())
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"

    def __exit__(self, *exc: object) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()
