"""The extraction worker inside tap serve waits for a gap between relayed requests before a batch
(a store write holds the GIL and would stall the streams), but never lets a backlog grow."""

from __future__ import annotations

import asyncio

import pytest

from tap.extract import worker
from tap.records import IngestEvent, Message
from tap.runtime import priority
from tap.runtime.priority import HotPath
from tap.wiring.runtime import Runtime
from testkit.waits import until


def queue_chunks(rt: Runtime, conversations: int) -> None:
    """One ready chunk per conversation, each telling where the user lives."""
    for n in range(conversations):
        messages = [
            Message(role="user", content=f"I live in Porto and work at Acme number {n}.", id=f"c{n}:0"),
            Message(role="assistant", content="Noted.", id=f"c{n}:1"),
        ]
        rt.ingestor.ingest(IngestEvent(scope="me", conversation=f"c{n}", source="proxy", messages=messages))
    rt.worker.queue.flush()


def done(rt: Runtime) -> int:
    return rt.worker.queue.counts()["done"]


@pytest.fixture
def hot_path(monkeypatch: pytest.MonkeyPatch) -> HotPath:
    path = HotPath()
    monkeypatch.setattr(priority, "HOT_PATH", path)
    monkeypatch.setattr(worker, "GAP_POLL_S", 0.01)
    return path


async def test_a_batch_waits_while_requests_are_relayed(rt: Runtime, hot_path: HotPath) -> None:
    queue_chunks(rt, 1)
    stop = asyncio.Event()
    hot_path.enter()
    task = asyncio.create_task(rt.worker.run(stop))  # noqa: TID251 - a test's own task
    try:
        await until(lambda: rt.worker.status()["waiting_for_gap"], what="the worker to wait for a gap")
        await asyncio.sleep(0.3)
        assert done(rt) == 0
        hot_path.leave()
        await until(lambda: done(rt) == 1, what="the chunk extracted once the stream ended")
        assert not rt.worker.status()["waiting_for_gap"]
    finally:
        stop.set()
        await task


@pytest.mark.parametrize("patience_s", [0.05, 60.0])
async def test_under_constant_traffic_a_batch_goes_on_after_its_patience_or_with_a_backlog(
    rt: Runtime, hot_path: HotPath, monkeypatch: pytest.MonkeyPatch, patience_s: float
) -> None:
    """A short patience runs the one chunk; a long one still runs a whole batch that is ready."""
    monkeypatch.setattr(worker, "GAP_WAIT_MAX_S", patience_s)
    queue_chunks(rt, 1 if patience_s < 1 else rt.worker.batch_size())
    stop = asyncio.Event()
    hot_path.enter()
    task = asyncio.create_task(rt.worker.run(stop))  # noqa: TID251 - a test's own task
    try:
        await until(lambda: done(rt) >= 1, what="a batch extracted while a request is relayed")
        assert hot_path.busy  # the request was still being relayed: the batch did not wait for its end
    finally:
        stop.set()
        await task
        hot_path.leave()
