"""How long tap keeps conversation text it no longer needs (`[data] retention_days`, default 30).

Captured exchanges in the turn log (tap.ingest.capture.TurnLog) are a safety copy: once ingested, their
turns live on in the queue until extracted, and as memories after. Extracted chunks in the queue
(tap.ingest.queue) keep their text only for the record. Both are deleted once older than the retention:
at start-up and every PRUNE_EVERY_S while `tap serve` runs. What is never pruned: memories (the
user manages those), chunks still queued, running or dead-lettered (their text is still needed),
and the queue's `seen` turn ids (no text; they keep old turns from being taken in twice).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from tap.ingest.capture import TurnLog
from tap.ingest.queue import ChunkQueue

log = logging.getLogger(__name__)
PRUNE_EVERY_S = 3600.0
DAY_S = 86400.0


def prune(turn_log: TurnLog, queue: ChunkQueue, retention_days: float, *, now: float | None = None) -> dict[str, int]:
    """Delete what is older than the retention; returns rows removed per file."""
    cutoff = (time.time() if now is None else now) - retention_days * DAY_S
    return {"turn log": turn_log.prune(cutoff), "queue": queue.prune_done(cutoff)}


async def keep_pruning(
    turn_log: TurnLog,
    queue: ChunkQueue,
    retention_days: float,
    stop: asyncio.Event,
    *,
    every_s: float = PRUNE_EVERY_S,
    now: Callable[[], float] = time.time,
) -> None:
    """Prune now and then every `every_s` seconds until `stop` is set (a task of `tap serve`)."""
    while not stop.is_set():
        try:
            removed = await asyncio.to_thread(prune, turn_log, queue, retention_days, now=now())
        except Exception as exc:  # a locked or broken file: try again next time
            log.warning("pruning old conversation text failed: %s: %s", type(exc).__name__, exc)
        else:
            if any(removed.values()):
                log.info(
                    "removed conversation text older than %g days: %s",
                    retention_days,
                    ", ".join(f"{n} from the {where}" for where, n in removed.items()),
                )
        try:
            await asyncio.wait_for(stop.wait(), every_s)
        except TimeoutError:
            pass
