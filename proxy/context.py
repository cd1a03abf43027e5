"""ServerContext: what every route on tap's port needs from the core (the LLM API routes, the admin
and lifecycle API, the hook endpoints, the web page), handed in by the composition root
(tap.wiring.server). It was called ProxyContext, but it serves the whole HTTP server, not the proxy
routes alone."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp import web

from tap.config import Config
from tap.extract.consolidation import ConsolidationJob
from tap.ingest.capture import Capture
from tap.intercept.core import Interceptor
from tap.memories.service import MemoryService
from tap.recall.engine import RecallEngine
from tap.recall.why import WhyLog
from tap.records import Hit, IngestEvent
from tap.runtime.diskspace import SpaceWatch
from tap.runtime.metrics import Metrics


@dataclass
class ServerContext:
    """Dependencies of every route of the web app (proxy.web_app); one per running server."""

    config: Config
    memories: MemoryService
    recall: RecallEngine
    metrics: Metrics
    admin_token: str
    interceptor: Interceptor
    version: str = "0"
    store_location: str = ""
    embedder_id: str = ""
    capture: Capture | None = None
    ingest: Callable[[IngestEvent], Awaitable[int]] | None = None
    why: WhyLog | None = None
    consolidation: ConsolidationJob | None = None
    inactive_search: Callable[[Sequence[float], str, int], list[Hit]] | None = None
    space: SpaceWatch | None = None
    store_problem: Callable[[], str] | None = None

    def status(self) -> dict[str, Any]:
        """The `/tap/status` document."""
        return self.metrics.snapshot()


context_key = web.AppKey("tap_context", ServerContext)
session_key = web.AppKey("tap_upstream_session", aiohttp.ClientSession)
