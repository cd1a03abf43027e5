"""`/mcp` on `tap serve` (bridges.mcp; docs/mcp.md): the agent tools answered from the server's
runtime (its memory service, its extraction's reconcile for `remember`, its `tap why` records), in
the scope each request names (proxy/mcp_route.py). The stdio server an agent starts is
tap.wiring.mcp_stdio.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from aiohttp import web

from bridges.mcp.http import HttpEndpoint
from bridges.mcp.local import LocalTools
from bridges.mcp.tools import build_server
from proxy.mcp_route import mcp_key
from tap.memories.agent import Confirmations, caller_scope
from tap.recall.why import WhyLog
from tap.runtime.tasks import create_task
from tap.wiring.mcp_stdio import agent_memory
from tap.wiring.runtime import Runtime


def attach_mcp(app: web.Application, rt: Runtime, why: WhyLog | None, version: str) -> HttpEndpoint:
    """Serve the tools at `/mcp` of `app` from this runtime (the endpoint runs while the app does)."""
    agent = agent_memory(rt, Confirmations(), why)
    tools = LocalTools(lambda: contextlib.nullcontext(agent), caller_scope.get)
    endpoint = HttpEndpoint(build_server(tools, version=version))
    app[mcp_key] = endpoint

    async def running(_: web.Application) -> AsyncIterator[None]:
        started, stop = asyncio.Event(), asyncio.Event()
        task = create_task(endpoint.serve(started, stop), name="mcp-http")
        waiting = create_task(started.wait(), name="mcp-http-started")
        await asyncio.wait({task, waiting}, return_when=asyncio.FIRST_COMPLETED)
        if task.done():  # it could not start: say why at once
            waiting.cancel()
            task.result()
        yield
        stop.set()
        await task

    app.cleanup_ctx.append(running)
    return endpoint
