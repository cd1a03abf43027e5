"""What the aiohttp app needs from the core, handed in by the composition root (tap.server)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tap.config import Config
from tap.memories import MemoryService
from tap.metrics import Metrics
from tap.recall import RecallEngine
from tap.records import IngestEvent

Ingest = Callable[[IngestEvent], Awaitable[int]]


async def _no_ingest(event: IngestEvent) -> int:
    return 0


@dataclass
class ProxyContext:
    """Dependencies of every route; one per app."""

    config: Config
    memories: MemoryService
    recall: RecallEngine
    metrics: Metrics
    admin_token: str
    version: str = "0"
    store_location: str = ""
    embedder_id: str = ""
    ingest: Ingest = _no_ingest
    extras: dict[str, Any] = field(default_factory=dict)

    def status(self) -> dict[str, Any]:
        """The `/tap/status` document."""
        return self.metrics.snapshot()


context_key = web.AppKey("tap_context", ProxyContext)
