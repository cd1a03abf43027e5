"""The proxy counts the requests it relays (tap.runtime.priority.HOT_PATH), and background writers pause
between their batches only while there are some (tap.runtime.priority.yield_after)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from proxy.hooks_routes import add_hook_routes, hooks_key
from tap.runtime import priority
from tap.runtime.priority import HOT_PATH, HotPath, yield_after
from testkit.upstreams import FakeOllama
from testkit.waits import until
from tests.proxy.harness import TapProxy


async def test_a_request_counts_while_it_is_relayed_and_not_after(isolated_home: Path) -> None:
    relaying = HOT_PATH.serving_now  # what other tests of this process may have left open
    held = asyncio.Event()
    async with FakeOllama() as up, TapProxy(isolated_home, ollama=up.url) as tap, aiohttp.ClientSession() as session:
        up.reply_content("late", hold=held)
        body = {"model": "llama3.2", "stream": False, "messages": [{"role": "user", "content": "hello"}]}

        async def ask() -> int:
            async with session.post(f"{tap.url}/api/chat", json=body) as resp:
                await resp.read()
                return resp.status

        answer = asyncio.create_task(ask())
        await until(lambda: len(up.requests) == 1, what="the request upstream")
        assert HOT_PATH.serving_now == relaying + 1
        held.set()
        assert await answer == 200
        async with session.get(f"{tap.url}/api/tags") as resp:  # a pass-through path counts too, then ends
            await resp.read()
    assert HOT_PATH.serving_now == relaying


def test_background_writers_pause_only_while_the_proxy_relays(monkeypatch: pytest.MonkeyPatch) -> None:
    hot_path = HotPath()
    monkeypatch.setattr(priority, "HOT_PATH", hot_path)
    pauses: list[float] = []
    monkeypatch.setattr(priority.time, "sleep", pauses.append)
    clock = iter([10.03, 10.03])  # a batch begun at 10.0 that took 30 ms
    monkeypatch.setattr(priority.time, "perf_counter", lambda: next(clock))
    yield_after(10.0)
    assert pauses == []  # nothing relayed: a backfill or the CLI never waits
    with hot_path.serving():
        yield_after(10.0)
    assert pauses == [pytest.approx(0.03 * (1 / priority.BACKGROUND_WRITE_SHARE - 1))]
    assert not hot_path.busy


async def test_an_agent_hook_counts_while_it_is_answered() -> None:
    seen: list[int] = []
    relaying = HOT_PATH.serving_now

    async def endpoint(event: str, agent: str, body: bytes) -> bytes:
        seen.append(HOT_PATH.serving_now)
        return b'{"ok": true}'

    app = web.Application()
    app[hooks_key] = endpoint
    add_hook_routes(app)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        port = runner.addresses[0][1]
        async with aiohttp.ClientSession() as session:
            async with session.post(f"http://127.0.0.1:{port}/tap/hooks/UserPromptSubmit", data=b"{}") as resp:
                assert resp.status == 200 and await resp.read() == b'{"ok": true}'
    finally:
        await runner.cleanup()
    assert seen == [relaying + 1] and HOT_PATH.serving_now == relaying
