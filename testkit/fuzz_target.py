"""The whole `tap serve` app on 127.0.0.1:0 for the fuzzer: every route it serves, real components.

    async with FuzzTarget(home) as target:
        report = await fuzz(target.url, target.routes, token=target.token, ...)
        problems = await target.read_back()      # every read still works after the fuzz

It wires what tap.wiring.server.serve_forever wires — the runtime (embedded Chroma, ONNX embedder, queue,
turn log), the proxy and admin routes, the agent-hook routes and the Telegram bridge — in front of
fake upstreams speaking the real protocols (Anthropic, OpenAI, Ollama, the Bot API).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import aiohttp
from aiohttp import web

from proxy.web_app import make_web_app
from tap.config import LoadedConfig, parse_config
from tap.ingest.capture import Capture, TurnLog
from tap.runtime.tasks import running_tasks
from tap.wiring.runtime import Runtime, open_runtime
from tap.wiring.server import build_context
from testkit.fake_telegram import TOKEN, FakeBotAPI
from testkit.fakes import fake_adapters
from testkit.fuzzer import Route, routes_of
from testkit.upstreams import FakeAnthropic, FakeOllama, FakeOpenAI

ADMIN_TOKEN = "fuzz-admin-token"
WEBHOOK_SECRET = "fuzz-webhook-secret"
ENV = {"TAP_TELEGRAM_TOKEN": TOKEN, "TAP_TELEGRAM_SECRET": WEBHOOK_SECRET, "ANTHROPIC_API_KEY": "sk-ant-fuzz"}


@contextlib.contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


class FuzzTarget:
    """`tap serve`'s app with fake upstreams; `routes`, `url`, `token`, `webhook_headers`."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.url = ""
        self.token = ADMIN_TOKEN
        self.routes: list[Route] = []
        self.rt: Runtime | None = None
        self._stack = contextlib.AsyncExitStack()
        self._runner: web.AppRunner | None = None
        self._turn_log: TurnLog | None = None

    @property
    def webhook_headers(self) -> dict[str, dict[str, str]]:
        return {"/telegram/": {"X-Telegram-Bot-Api-Secret-Token": WEBHOOK_SECRET}}

    async def __aenter__(self) -> Self:
        stack = self._stack
        stack.enter_context(environment(ENV))
        claude = await stack.enter_async_context(FakeAnthropic(chunk_sizes=(4096,)))
        gpt = await stack.enter_async_context(FakeOpenAI(chunk_sizes=(4096,)))
        llama = await stack.enter_async_context(FakeOllama(chunk_sizes=(4096,)))
        bot = await stack.enter_async_context(FakeBotAPI())
        config = parse_config(
            "\n".join(
                [
                    "[upstream]",
                    f'anthropic = "{claude.url}"',
                    f'openai = "{gpt.url}"',
                    f'ollama = "{llama.url}"',
                    "read_timeout_s = 10.0",
                    "[telegram]",
                    "enabled = true",
                    f'api_url = "{bot.url}"',
                    "allowed_users = [111]",
                    f'anthropic_url = "{claude.url}"',
                    "reply_timeout_s = 5.0",
                ]
            )
        )
        loaded = LoadedConfig(config=config, path=None, data_dir=self.home)
        self.rt = await asyncio.to_thread(open_runtime, loaded, adapters=fake_adapters)
        self._turn_log = TurnLog(self.home / "turnlog.db")
        ctx = build_context(self.rt, ADMIN_TOKEN, Capture(self._turn_log, self.rt.ingestor.ingest_async))
        app = make_web_app(ctx)
        _attach_hooks(app, self.rt, ctx)
        _attach_mcp(app, self.rt, ctx)
        from bridges.telegram import TelegramDeps, add_telegram
        from store.llm import make_reply_model

        deps = (config.telegram, self.home, ctx.interceptor, self.rt.memories, self.rt.ledger, make_reply_model)
        add_telegram(app, TelegramDeps(*deps))
        self.routes = routes_of(app)
        self._runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=2.0)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        pending = running_tasks()
        if pending:
            await asyncio.wait(pending, timeout=10.0)
        if self._turn_log is not None:
            self._turn_log.close()
        if self.rt is not None:
            self.rt.close()
        await self._stack.aclose()

    def memory_ids(self) -> list[str]:
        """Ids of a few memories (so the id routes also hit memories that exist)."""
        assert self.rt is not None
        return [m.id for m in self.rt.memories.list_memories(scope=None, limit=20)]

    def seed_memories(self) -> None:
        assert self.rt is not None
        for scope in ("fuzz-a", "default"):
            self.rt.memories.add(scope=scope, content="The user lives in Porto.")
            self.rt.memories.add(scope=scope, content="The team uses Postgres.", kind="decision")

    def extract(self) -> int:
        """Run extraction over everything the fuzz queued; returns failed chunk attempts."""
        assert self.rt is not None
        self.rt.worker.drain()
        return self.rt.worker.failures

    async def read_back(self) -> list[str]:
        """Every read an admin or user makes afterwards, for every scope: [] when all answered 200."""
        assert self.rt is not None
        scopes = sorted(self.rt.memories.stats().by_scope) + ["default", "fuzz-a"]
        problems: list[str] = []
        headers = {"Authorization": f"Bearer {self.token}"}
        async with aiohttp.ClientSession(headers=headers) as session:
            requests: list[tuple[str, str, Any]] = [
                ("GET", "/tap/memories?limit=100000&all=1", None),
                ("GET", "/tap/export", None),
                ("GET", "/tap/stats", None),
                ("GET", "/tap/status", None),
                ("GET", "/tap/health", None),
                ("GET", "/tap/scopes", None),
                ("GET", "/tap/memories/search?q=porto", None),  # every scope at once
            ]
            for scope in scopes:
                requests.append(("POST", "/tap/recall", {"text": "Porto Postgres password hello", "scope": scope}))
                requests.append(("GET", f"/tap/memories/search?q=porto&scope={scope}", None))
            for method, path, payload in requests:
                async with session.request(method, self.url + path, json=payload) as response:
                    if response.status != 200:
                        problems.append(f"{method} {path} {payload}: {response.status} {await response.text()}")
        for memory in self.rt.memories.list_memories(scope=None, limit=100000, all_versions=True):
            try:
                self.rt.memories.chain(memory.id)
            except Exception as exc:  # a read that breaks on a stored value
                problems.append(f"chain {memory.id}: {type(exc).__name__}: {exc}")
        return problems


def _attach_mcp(app: web.Application, rt: Runtime, ctx: Any) -> None:
    """The MCP endpoint, as `tap serve` attaches it (when this checkout has it)."""
    try:
        from tap.wiring.mcp_service import attach_mcp
    except ImportError:
        return
    attach_mcp(app, rt, ctx.why, "fuzz")


def _attach_hooks(app: web.Application, rt: Runtime, ctx: Any) -> None:
    """The agent-hook endpoints, as `tap serve` attaches them (when this checkout has them)."""
    try:
        from tap.wiring.hook_endpoint import attach_hooks
    except ImportError:
        return
    attach_hooks(app, rt, ctx.interceptor, ctx.metrics)
