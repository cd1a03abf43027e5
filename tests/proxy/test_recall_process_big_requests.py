"""Big requests through a real `tap serve` with its recall process: nothing waits on the pipe.

Answers with long `tap why` traces that nobody reads any more (their recall gave up at its
deadline) used to fill the child's send buffer while `tap serve` sent it a multi-megabyte recall
holding its send lock: both ends blocked for good, and every later write of the lexical index
(which tells the child) and `tap serve`'s shutdown with them."""

from __future__ import annotations

import asyncio
import json
import random
import signal
from pathlib import Path

import aiohttp
import pytest

from testkit.serve_process import admin, configured
from testkit.upstreams import FakeAnthropic
from testkit.waits import finishes, until

pytestmark = pytest.mark.slow

H = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
WORDS = "garden bees porto apples sister river bicycle violin coffee".split()


def long_note(rnd: random.Random, n: int) -> str:
    """A memory of ~4 KB that every question below matches (so each answer carries long traces)."""
    return f"Note {n}: I keep bees in my garden. " + " ".join(
        f"{rnd.choice(WORDS)}{rnd.randrange(1000)}" for _ in range(450)
    )


async def test_big_requests_never_wedge_the_recall_process(isolated_home: Path, tmp_path: Path) -> None:
    async with FakeAnthropic() as up:
        server = configured(
            isolated_home, tmp_path, f'[upstream]\nanthropic = "{up.url}"\n[recall]\ndeadline_ms = 25\n'
        )
        await asyncio.to_thread(server.start)
        try:
            await until(lambda: admin(server, "GET", "/tap/status")["recall_process"]["ready"], within=120)
            rnd = random.Random(7)
            for n in range(60):
                admin(server, "POST", "/tap/memories", {"scope": "default", "content": long_note(rnd, n)})
            history = ("Where do I keep my bees, and what grows in the garden? " * 60_000)[:3_000_000]
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as session:
                for n in range(10):
                    payload = {
                        "model": "m",
                        "max_tokens": 5,
                        "messages": [
                            {"role": "user", "content": f"conversation {n}: {history}"},
                            {"role": "assistant", "content": "Noted."},
                            {"role": "user", "content": "Where do I keep my bees?"},
                        ],
                    }
                    async with session.post(server.url + "/v1/messages", json=payload, headers=H) as response:
                        assert response.status == 200
                        await response.read()
            # a write tells the recall process: it must not wait on the pipe
            await asyncio.to_thread(
                finishes,
                lambda: admin(server, "POST", "/tap/memories", {"scope": "default", "content": "I moved to Lisbon"}),
                within=60,
                what="a memory write after the big requests",
            )
            status = admin(server, "GET", "/tap/status")["recall_process"]
            assert status["queued"] < 1000, json.dumps(status)
        finally:
            output = await asyncio.to_thread(server.stop, signal.SIGTERM, 60)
        assert "tap: stopped" in output  # it shut down by itself, not killed after the wait
