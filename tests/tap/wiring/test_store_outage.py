"""A memory-store outage loses nothing: a real Chroma server is stopped while conversations keep
arriving and the extraction worker keeps running, then started again; every chunk is extracted,
none is dead-lettered, and `/tap/health`'s checks say "down" (503) meanwhile."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from tap.config import LoadedConfig, parse_config
from tap.records import IngestEvent, Message
from tap.runtime.health import check_health
from tap.wiring.runtime import open_runtime
from testkit.chroma_server import ChromaServer
from testkit.waits import until

pytestmark = pytest.mark.slow

CONVERSATIONS = 12
OUTAGE_S = 8.0


def event(n: int) -> IngestEvent:
    text = f"My cat number {n} is called Whiskers{n} and she sleeps on the red sofa in Porto."
    return IngestEvent(
        scope="outage",
        conversation=f"c{n}",
        source="hook",
        messages=[
            Message(role="user", content=text, id=f"u{n}", timestamp=time.time()),
            Message(role="assistant", content=f"Whiskers{n} sounds like a lovely cat.", id=f"a{n}"),
        ],
    )


async def test_chunks_wait_for_the_store_and_none_is_lost(tmp_path: Path, isolated_home: Path) -> None:
    server = ChromaServer(tmp_path / "chroma-data")
    server.start()
    toml = f'[store]\nurl = "{server.url}"\n[extract]\nbackoff_s = 0.05\nmax_attempts = 2\nflush_after_s = 0\n'
    rt = await asyncio.to_thread(
        open_runtime, LoadedConfig(config=parse_config(toml), path=None, data_dir=isolated_home)
    )
    rt.worker.poll_s = 0.1
    stop = asyncio.Event()
    worker = asyncio.create_task(rt.worker.run(stop))
    try:
        for n in range(3):
            await rt.ingestor.ingest_async(event(n))
        await until(lambda: rt.queue.counts()["done"] >= 3, what="extraction before the outage")

        server.stop()
        for n in range(3, CONVERSATIONS):  # traffic during the outage
            await rt.ingestor.ingest_async(event(n))
            await asyncio.sleep(OUTAGE_S / CONVERSATIONS)  # traffic spread over the outage (pacing, not a wait)
        await until(lambda: rt.worker.waiting_for_store != "", what="the worker to notice the outage")
        down = await check_health(rt.store, rt.embedder, rt.worker.status)
        counts = rt.queue.counts()
        assert down["status"] == "down" and not down["checks"]["store"]["ok"]
        assert down["checks"]["extractor"]["state"] == "waiting for the store"
        assert counts["dead"] == 0 and counts["done"] == 3 and rt.worker.postponed_for_outage > 0

        await asyncio.to_thread(server.start)
        await until(
            lambda: rt.queue.counts()["done"] >= CONVERSATIONS and rt.queue.counts()["queued"] == 0,
            what="every chunk to be extracted after the store came back",
        )
        up = await check_health(rt.store, rt.embedder, rt.worker.status)
        counts = rt.queue.counts()
        memories = rt.memories.list_memories(scope="outage", limit=1000, all_versions=True)
    finally:
        stop.set()
        await asyncio.wait({worker}, timeout=30)
        rt.close()
        server.stop()
    assert counts["dead"] == 0 and counts["running"] == 0 and counts["done"] == CONVERSATIONS
    assert up["status"] == "ok" and rt.worker.waiting_for_store == ""
    stored = " ".join(m.content for m in memories)
    missing = [n for n in range(CONVERSATIONS) if f"Whiskers{n} " not in stored]
    assert missing == []
