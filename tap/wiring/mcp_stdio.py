"""`tap mcp`: the stdio MCP server an agent starts (bridges.mcp; docs/mcp.md).

It runs in the scope `stdio_scope` names: `--scope`, else `[hooks] scope`, else the project of
the directory the agent started it in (CLAUDE_PROJECT_DIR when Claude Code sets it): the rule the
hooks use, so the tools see the memories the hooks inject. Each call goes to the running `tap
serve` when there is one (its server.json; bridges.mcp.relay): the server is the one writer of the
data dir, and its `tap why` records answer `why`. Without a server the call opens the embedded
store, answers, and closes it again (`EmbeddedAgent`): the data-dir lock is held only while a call
runs, so `tap serve`, a hook or a CLI command can start between calls; the embedder stays loaded.
A data dir another process holds is waited for up to BUSY_WAIT_S. A server that stops mid-session
is noticed at the next call, which then opens the store itself.

Start-up imports the SDK and tap's light core only: the store, the embedder and the runtime are
imported by the first call that needs them (and never while a server answers).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import sys
import threading
import time
from collections.abc import Iterator
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bridges.hooks.scope import hook_scope
from bridges.mcp.local import LocalTools
from bridges.mcp.relay import RelayTools, Unreachable
from bridges.mcp.tools import ToolCallError, build_server
from tap.admin_token import ensure_token, read_server_info
from tap.config import LoadedConfig
from tap.errors import StoreError
from tap.memories.agent import AgentMemory, Confirmations
from tap.ports import Embedder, MemoryStore
from tap.recall.why import WhyLog

if TYPE_CHECKING:
    from tap.wiring.runtime import Runtime

log = logging.getLogger("tap.mcp")
BUSY_WAIT_S = 5.0


def agent_memory(rt: Runtime, confirmations: Confirmations, why: WhyLog | None = None) -> AgentMemory:
    """The agent tools' operations over an open runtime."""
    from tap.extract.remember import remember

    return AgentMemory(rt.memories, functools.partial(remember, rt.worker.extraction), confirmations, why=why)


class EmbeddedAgent:
    """AgentMemory over the embedded store, opened for one call at a time (see the module docstring)."""

    def __init__(self, loaded: LoadedConfig, *, busy_wait_s: float = BUSY_WAIT_S) -> None:
        self.loaded = loaded
        self.busy_wait_s = busy_wait_s
        self.confirmations = Confirmations()  # outlive each call: a forget by query is two calls
        self._lock = threading.Lock()

    @cached_property
    def _embedder(self) -> Embedder:
        from store.embedders import make_embedder

        return make_embedder(self.loaded.config.embedder)

    def _adapters(self, loaded: LoadedConfig) -> tuple[Embedder, MemoryStore]:
        from store.chroma import ChromaStore

        store = loaded.config.store
        embedder = self._embedder
        return embedder, ChromaStore(
            data_dir=loaded.data_dir,
            url=store.url,
            collection=store.collection,
            embedder_id=embedder.model_id,
            dimensions=embedder.dimensions,
        )

    def _runtime(self) -> Runtime:
        from tap.wiring.runtime import open_runtime  # the store and the runtime: on the first call only

        deadline = time.monotonic() + self.busy_wait_s
        while True:
            try:
                return open_runtime(self.loaded, adapters=self._adapters, warm_recall=False)
            except StoreError:
                if read_server_info(self.loaded.data_dir) is not None or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    @contextlib.contextmanager
    def open(self) -> Iterator[AgentMemory]:
        """The store, open for one call (one call at a time)."""
        with self._lock:
            rt = self._runtime()
            try:
                yield agent_memory(rt, self.confirmations)
            finally:
                rt.close()


class StdioTools:
    """`tap mcp`'s backend: the running server's tools, else the embedded store's."""

    def __init__(self, loaded: LoadedConfig, scope: str) -> None:
        self.loaded = loaded
        self.scope = scope
        self.embedded = EmbeddedAgent(loaded)
        self.local = LocalTools(self.embedded.open, lambda: scope)

    async def call(self, tool: str, arguments: dict[str, Any]) -> str:
        """Through the server when one runs, else on the embedded store."""
        data_dir = self.loaded.data_dir
        info = read_server_info(data_dir)
        if info is not None:
            token = ensure_token(data_dir, self.loaded.config.admin.token_env)
            try:
                return await RelayTools(info.url, token, self.scope).call(tool, arguments)
            except Unreachable as exc:
                if read_server_info(data_dir) is not None:
                    raise ToolCallError(f"{exc}; is it still starting or stopping? try again") from None
                log.info("tap serve stopped; answering from the store: %s", exc)
        return await self.local.call(tool, arguments)


def stdio_scope(loaded: LoadedConfig, explicit: str | None, environ: dict[str, str] | None = None) -> str:
    """The scope of a `tap mcp` process (see the module docstring)."""
    if explicit and explicit.strip():
        return hook_scope(explicit, "")
    env = os.environ if environ is None else environ
    where = env.get("CLAUDE_PROJECT_DIR") or os.getcwd()
    return hook_scope(loaded.config.hooks.scope, str(Path(where)))


def serve_stdio(loaded: LoadedConfig, scope: str, version: str) -> None:
    """Run the stdio server until the agent closes stdin; logs go to stderr (stdout is the protocol's)."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="tap mcp: %(levelname)s %(name)s: %(message)s")
    build_server(StdioTools(loaded, scope), version=version).run("stdio")
