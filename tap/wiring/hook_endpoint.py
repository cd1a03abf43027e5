"""Agent hooks in `tap serve`: the endpoint behind `POST /tap/hooks/{event}` (proxy/hooks_routes.py).

The HookService runs over the server's runtime (tap.wiring.hook_service.RuntimeBackend); its context
events recall through the server's interception core, on the server's event loop (so each has its
request log line and `tap why` record, and counts in `/tap/status` like a proxied request). Prompt events
(SessionStart, UserPromptSubmit) are answered within `[hooks] timeout_s` x 0.8, so a `tap hook`
process waiting `timeout_s` in all still gets the answer; past it the answer is empty, one line
goes to the log and nothing is committed (a memory the agent never received is not marked as
given). Stop, PreCompact and SessionEnd are answered at once and their work runs in a background
task, so the agent never waits for it; the server's extraction worker takes the new chunk at its
next poll. Shutdown waits up to CLOSE_WAIT_S for those tasks before closing hooks.db.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import msgspec
from aiohttp import web

from bridges.hooks.hook_db import STATE_FILE, HookState
from bridges.hooks.hook_session import HookService
from bridges.hooks.hooklog import log_line
from bridges.hooks.names import AGENTS, EVENTS, PROMPT_EVENTS, cli_event
from bridges.hooks.payload import HookInput, parse_input
from bridges.logtail import OffsetStore
from proxy.hooks_routes import hooks_key
from tap.intercept.core import Interceptor
from tap.runtime.metrics import Metrics
from tap.runtime.tasks import create_task
from tap.wiring.hook_service import CoreBlocks, Pipeline, RuntimeBackend, TranscriptReader, on_loop
from tap.wiring.runtime import Runtime

log = logging.getLogger("tap.hooks")
CLOSE_WAIT_S = 10.0


class ServerHooks:
    """The endpoint behind `POST /tap/hooks/{event}` (proxy.hooks_routes.HookEndpoint)."""

    def __init__(self, service: HookService, data_dir: Path, timeout_s: float) -> None:
        self.service = service
        self.data_dir = data_dir
        self.timeout_s = timeout_s
        self.captures: set[asyncio.Task[None]] = set()

    async def __call__(self, event: str, agent: str, body: bytes) -> bytes:
        """The answer body (empty: nothing to add); ValueError for a bad event, agent or payload."""
        name = cli_event(event)
        if name is None:
            raise ValueError(f"unknown hook event {event!r} (one of {', '.join(EVENTS)})")
        if agent not in AGENTS:
            raise ValueError(f"unknown agent {agent!r} (one of {', '.join(AGENTS)})")
        payload = parse_input(body)
        if name not in PROMPT_EVENTS:
            task = create_task(self._capture(name, agent, payload), name=f"hook-{name}-{payload.session_id}")
            self.captures.add(task)
            task.add_done_callback(self.captures.discard)
            return b""
        try:
            reply = await asyncio.wait_for(asyncio.to_thread(self.service.handle, name, agent, payload), self.timeout_s)
        except TimeoutError:
            self._failed(name, agent, payload.session_id, f"no answer within {self.timeout_s:g} s")
            return b""
        except Exception as exc:  # fail open: the agent goes on without memories
            self._failed(name, agent, payload.session_id, f"{type(exc).__name__}: {exc}")
            return b""
        await asyncio.to_thread(self.service.commit, name, agent, reply)
        return msgspec.json.encode(reply.output) if reply.output else b""

    async def _capture(self, event: str, agent: str, payload: HookInput) -> None:
        try:
            reply = await asyncio.to_thread(self.service.handle, event, agent, payload)
            await asyncio.to_thread(self.service.commit, event, agent, reply)
        except Exception as exc:
            self._failed(event, agent, payload.session_id, f"{type(exc).__name__}: {exc}")

    def _failed(self, event: str, agent: str, session: str, reason: str) -> None:
        log.warning("hook %s (%s, session %s): %s", EVENTS[event], agent, session, reason)
        log_line(self.data_dir, f"hook {EVENTS[event]} ({agent}, session {session}) in tap serve: {reason}")
        try:
            self.service.state.fired(agent, event, f"failed: {reason}")
        except Exception:
            log.exception("could not record the hook's status")


def attach_hooks(app: web.Application, rt: Runtime, interceptor: Interceptor, metrics: Metrics) -> ServerHooks:
    """Serve the agent hooks from this runtime on `app` (closed with the app); called on the
    server's event loop, where the hooks' recalls will run."""
    data_dir = rt.loaded.data_dir
    config = rt.loaded.config
    state = HookState(data_dir / STATE_FILE)
    offsets = OffsetStore(data_dir / STATE_FILE)
    pipeline = Pipeline(rt.queue, rt.ingestor, TranscriptReader(offsets, rt.ingestor.ingest))

    answer_ms = int(config.hooks.timeout_s * 0.8 * 1000)  # a digest may take what the endpoint's answer may
    blocks = CoreBlocks(
        interceptor, rt.memories.newest_statements, on_loop(asyncio.get_running_loop()), start_deadline_ms=answer_ms
    )
    service = HookService(config.hooks, RuntimeBackend(blocks, pipeline), state)
    metrics.sections["hooks"] = service.status
    endpoint = ServerHooks(service, data_dir, max(0.1, config.hooks.timeout_s * 0.8))
    app[hooks_key] = endpoint

    async def close(_: web.Application) -> None:
        if endpoint.captures:  # let the last Stops finish their reading before the files close
            await asyncio.wait(set(endpoint.captures), timeout=CLOSE_WAIT_S)
        state.close()
        offsets.close()

    app.on_cleanup.append(close)
    return endpoint
