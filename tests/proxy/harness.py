"""A real tap app (capture, ingestion, recall, admin API) on 127.0.0.1:0 in front of fake upstreams.

The store and embedder are the fast fakes (testkit/fakes.py) unless a test asks for the real ones
with `real_store=True` (Chroma and ONNX: restarts, the store's files, recall quality).
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import msgspec
from aiohttp import web

from proxy.web_app import make_web_app
from tap.config import LoadedConfig, parse_config
from tap.ingest.capture import Capture, TurnLog
from tap.records import IngestEvent
from tap.runtime.tasks import running_tasks
from tap.wiring.runtime import Runtime, configured_adapters, open_runtime
from tap.wiring.server import build_context
from testkit.fakes import fake_adapters

TEST_DEADLINE_MS = 3000


def hold_embedder(embedder: Any, release: threading.Event) -> None:
    """Make the embedder's query calls wait until `release` is set (or 30 s): a recall that cannot
    finish before its deadline, for as long as a test needs, without sleeping."""
    one, many = embedder.embed_query, getattr(embedder, "embed_queries", None)

    def embed_query(text: str) -> list[float]:
        release.wait(30)
        return list(one(text))

    def embed_queries(texts: Any) -> list[list[float]]:
        release.wait(30)
        return [list(v) for v in many(texts)] if many is not None else [one(t) for t in texts]

    embedder.embed_query = embed_query
    embedder.embed_queries = embed_queries


class TapProxy:
    """`async with TapProxy(home, anthropic=up.url) as tap:` → tap.url, tap.events, tap.memories.service
    (`mcp=True`: with the MCP endpoint at `/mcp`)."""

    def __init__(
        self,
        home: Path,
        *,
        extra_toml: str = "",
        read_timeout: float = 3.0,
        real_store: bool = False,
        mcp: bool = False,
        **upstreams: str,
    ) -> None:
        lines = [
            "[upstream]",
            *(f'{name} = "{url}"' for name, url in upstreams.items()),
            "connect_timeout_s = 2.0",
            f"read_timeout_s = {read_timeout}",
            extra_toml,
        ]
        self.config = parse_config("\n".join(lines))
        if "deadline_ms" not in extra_toml:
            # a busy test host must not shed the recalls these tests expect (the default is 150 ms);
            # the deadline tests hold the embedder and set the deadline themselves
            recall = msgspec.structs.replace(self.config.recall, deadline_ms=TEST_DEADLINE_MS)
            self.config = msgspec.structs.replace(self.config, recall=recall)
        self.home = home
        self.events: list[IngestEvent] = []
        self.url = ""
        self.rt: Runtime | None = None
        self._runner: web.AppRunner | None = None
        self.turn_log: TurnLog | None = None
        self.adapters = configured_adapters if real_store else fake_adapters
        self.mcp = mcp

    async def _ingest(self, event: IngestEvent) -> int:
        """Record the event, then hand it to the real ingestion entry point."""
        self.events.append(event)
        assert self.rt is not None
        return await self.rt.ingestor.ingest_async(event)

    async def __aenter__(self) -> Self:
        loaded = LoadedConfig(config=self.config, path=None, data_dir=self.home)
        self.rt = await asyncio.to_thread(open_runtime, loaded, adapters=self.adapters)
        self.turn_log_path = self.home / "turnlog.db"
        self.turn_log = TurnLog(self.turn_log_path)
        ctx = build_context(self.rt, "test-token", Capture(self.turn_log, self._ingest))
        self.ctx = ctx
        app = make_web_app(ctx)
        if self.mcp:  # `/mcp`, as tap serve attaches it
            from tap.wiring.mcp_service import attach_mcp

            attach_mcp(app, self.rt, ctx.why, "test")
        self._runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=2.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        await self.settle()
        if self.turn_log is not None:
            self.turn_log.close()
        if self.rt is not None:
            self.rt.close()

    async def settle(self) -> None:
        """Wait (up to 5 s) for background captures to finish."""
        pending = running_tasks()
        if pending:
            await asyncio.wait(pending, timeout=5.0)

    def remember(self, text: str, scope: str = "default", **fields: Any) -> str:
        """Store a memory directly and return its id."""
        assert self.rt is not None
        return self.rt.memories.add(scope=scope, content=text, **fields).id
