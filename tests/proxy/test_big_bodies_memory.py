"""Big request bodies leave no memory behind in a real `tap serve` (tap.runtime.allocator
map_large_blocks; recall's waiting room keeps nothing of a served recall; the scrub helper's queue
lets go of the last text; a long turn is cut before it is scrubbed and stored).

A guard, not a benchmark (the figures are in bench/soak.py): eight 20 MB requests left 470 MB more
than idle a minute later (glibc kept the freed blocks, references kept two of the bodies); the
bound here is generous."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest

from testkit.serve_process import admin, configured
from testkit.upstreams import FakeAnthropic
from testkit.waits import until

pytestmark = pytest.mark.slow

H = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
MB = 1024 * 1024


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


async def test_big_bodies_do_not_leave_their_size_behind(isolated_home: Path, tmp_path: Path) -> None:
    async with FakeAnthropic() as up:
        server = configured(
            isolated_home, tmp_path, f'[upstream]\nanthropic = "{up.url}"\n[extract]\nflush_after_s = 1.0\n'
        )
        await asyncio.to_thread(server.start)
        assert server.proc is not None
        pid = server.proc.pid
        try:
            await until(lambda: admin(server, "GET", "/tap/status")["recall_process"]["ready"], within=120)
            idle = rss_mb(pid)
            big = ("I like apples and my sister lives in Porto. " * (20 * MB // 44 + 1))[: 20 * MB]
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as session:
                for n in range(8):
                    payload = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": f"{n} {big}"}]}
                    async with session.post(server.url + "/v1/messages", json=payload, headers=H) as response:
                        assert response.status == 200
                        await response.read()
            del big
            await until(
                lambda: (
                    admin(server, "GET", "/tap/status")["extraction"]["queue"]["turns_waiting"] == 0
                    and admin(server, "GET", "/tap/status")["capture"]["captured"] == 8
                ),
                within=120,
                what="the exchanges captured and chunked",
            )
            await until(lambda: rss_mb(pid) < idle + 200, within=90, what=f"RSS back near idle ({idle:.0f} MB)")
        finally:
            await asyncio.to_thread(server.stop)
