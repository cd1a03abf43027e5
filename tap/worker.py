"""ExtractionWorker: drains the durable queue, one chunk at a time, with retries and dead letters.

Inside `tap serve` it runs as a background task (`run`): it closes idle conversation windows into
chunks, claims the oldest ready chunk, processes it in a worker thread and records the outcome.
`drain` does the same synchronously until nothing is ready (`tap extract run`).

Batches: with the offline pipeline (no LLM gate or extractor) up to BATCH_CHUNKS ready chunks are
claimed at once and processed through a tap.batching.WriteBuffer, so their store writes go out as
one add and one update (each store write has a large fixed cost), and repeated sentences are
embedded once (tap.batching.VectorCache). The rules extraction of the whole batch runs first
(`Extraction.plan`); the texts it will embed (candidates, episodes) are then embedded ahead on a
background thread, a few chunks at a time over every core, while the chunks are reconciled and
stored one by one, each waiting only for its own vectors (`VectorCache.prefetch`). A chunk is marked done only
after the flush; if the flush fails, every chunk of the batch is retried (memory ids are
deterministic, so nothing is doubled).
With an LLM in the pipeline a batch is one chunk, so a crash never repeats paid calls.

Failures (per chunk, never fatal to the worker): a retryable provider/store error goes back to the
queue after exponential backoff (or the server's retry-after, whichever is longer) and becomes a
dead letter after `max_attempts`; a non-retryable one (bad API key, malformed request) is dead at
once with its reason; a spent daily budget postpones the chunk to UTC midnight without counting an
attempt. Dead letters are listed in `tap status` and can be requeued with `tap extract retry`.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import random
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tap.batching import VectorCache, WriteBuffer
from tap.config import ExtractConfig
from tap.errors import ProviderError
from tap.extraction import BudgetExhausted, Extraction
from tap.priority import lower_thread_priority
from tap.queue import ChunkQueue, QueuedChunk

log = logging.getLogger(__name__)
MAX_BACKOFF_S = 3600.0
BATCH_CHUNKS = 32
CHUNKS_PER_EMBED = 4  # texts of this many chunks per embedder call: enough to keep every core busy


class ExtractionWorker:
    """One consumer of the chunk queue."""

    def __init__(
        self,
        queue: ChunkQueue,
        extraction: Extraction,
        config: ExtractConfig,
        *,
        flush_idle_s: float = 60.0,
        poll_s: float = 0.5,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.queue = queue
        self.extraction = extraction
        self.config = config
        self.flush_idle_s = flush_idle_s
        self.poll_s = poll_s
        self._now = now
        self.paused: str = ""
        self.processed = 0
        self.failures = 0
        self._vectors: VectorCache | None = None

    def backoff(self, attempts: int, retry_after: float | None) -> float:
        """Seconds before the next try: exponential with jitter, at least the server's hint."""
        delay: float = min(MAX_BACKOFF_S, self.config.backoff_s * 2.0**attempts) * random.uniform(0.8, 1.2)
        return max(delay, retry_after or 0.0)

    def run_once(self) -> bool:
        """Process the oldest ready chunk; False when none is ready."""
        return self.run_batch(1) > 0

    def batch_size(self) -> int:
        """Chunks per batch: one when an LLM is in the pipeline, else BATCH_CHUNKS."""
        llm = self.extraction.gate_provider is not None or self.extraction.extract_provider is not None
        return 1 if llm else BATCH_CHUNKS

    def run_batch(self, limit: int | None = None) -> int:
        """Process up to `limit` ready chunks (oldest first) with buffered writes; returns how many."""
        claimed: list[QueuedChunk] = []
        while len(claimed) < (limit or self.batch_size()) and (item := self.queue.claim()) is not None:
            claimed.append(item)
        if not claimed:
            return 0
        buffer = WriteBuffer(self.extraction.store)
        extraction = copy.copy(self.extraction)  # same counters, ledger and providers; buffered store
        extraction.store = buffer
        extraction.embedder = vectors = self._vector_cache()
        if len(claimed) > 1:
            try:
                groups = extraction.plan([item.chunk for item in claimed])
                vectors.prefetch(
                    [sum(groups[i : i + CHUNKS_PER_EMBED], []) for i in range(0, len(groups), CHUNKS_PER_EMBED)]
                )
            except Exception:  # the per-chunk path below meets the same fault and records it per chunk
                log.warning("planning %d chunks ahead failed; processing them one by one", len(claimed), exc_info=True)
        try:
            finished = [(item, outcome) for item in claimed if (outcome := self._process(extraction, item)) is not None]
        finally:
            vectors.discard_pending()
        try:
            buffer.flush()
        except Exception as exc:  # store down: nothing of this batch is done, retry all of it
            log.exception("writing the memories of %d chunk(s) failed", len(finished))
            for item, _ in finished:
                self._failed(item.chunk.id, item.attempts, exc, True, None)
            return len(claimed)
        for item, outcome in finished:
            self.processed += 1
            self.queue.done(item.chunk.id, outcome)
        return len(claimed)

    def _vector_cache(self) -> VectorCache:
        if self._vectors is None or self._vectors.embedder is not self.extraction.embedder:
            self._vectors = VectorCache(self.extraction.embedder)
        return self._vectors

    def _process(self, extraction: Extraction, item: QueuedChunk) -> str | None:
        """One chunk through the pipeline; its outcome, or None when it failed (already recorded)."""
        chunk = item.chunk
        try:
            outcome = extraction.process(chunk)
        except BudgetExhausted as exc:
            self.paused = str(exc)
            self.queue.postpone(chunk.id, exc.until, str(exc))
            return None
        except ProviderError as exc:
            self._failed(chunk.id, item.attempts, exc, exc.retryable, getattr(exc, "retry_after", None))
            return None
        except Exception as exc:  # store down, a bug, ...: keep the chunk, retry later
            log.exception("extraction of chunk %s failed", chunk.id)
            self._failed(chunk.id, item.attempts, exc, True, None)
            return None
        self.paused = ""
        return outcome

    def _failed(self, chunk_id: str, attempts: int, exc: Exception, retryable: bool, retry_after: float | None) -> None:
        self.failures += 1
        reason = f"{type(exc).__name__}: {exc}"
        if not retryable:
            log.error("chunk %s dead-lettered: %s", chunk_id, reason)
            self.queue.kill(chunk_id, reason)
            return
        delay = self.backoff(attempts, retry_after)
        if self.queue.retry(chunk_id, reason, delay_s=delay, max_attempts=self.config.max_attempts):
            log.error("chunk %s dead-lettered after %d attempts: %s", chunk_id, attempts + 1, reason)
        else:
            log.warning("chunk %s failed (%s); retrying in %.1f s", chunk_id, reason, delay)

    def drain(self, *, flush: bool = True, on_progress: Callable[[int], None] | None = None) -> int:
        """Close every window (when `flush`) and process ready chunks until none is left."""
        if flush:
            self.queue.flush()
        done = 0
        while claimed := self.run_batch():
            done += claimed
            if on_progress is not None:
                on_progress(done)
        return done

    async def run(self, stop: asyncio.Event) -> None:
        """Background loop for `tap serve`, on its own low-priority thread (tap.priority) so that
        the proxy's event loop and recall win every contest for a core; returns soon after `stop`."""
        loop = asyncio.get_running_loop()
        thread = ThreadPoolExecutor(1, "tap-extract", initializer=lower_thread_priority)
        try:
            while not stop.is_set():
                try:
                    await loop.run_in_executor(thread, lambda: self.queue.flush(idle_s=self.flush_idle_s))
                    worked = await loop.run_in_executor(thread, self.run_batch) > 0
                except Exception:
                    log.exception("extraction worker step failed")
                    worked = False
                if not worked:
                    try:
                        await asyncio.wait_for(stop.wait(), self.poll_s)
                    except TimeoutError:
                        pass
        finally:
            thread.shutdown(wait=False)  # never block the event loop on a batch still running

    def status(self) -> dict[str, Any]:
        """Queue depth, dead letters, gate counters, spend today."""
        counters = dict(self.extraction.counters)
        chunks = counters.get("chunks", 0)
        passed = counters.get("extracted", 0)
        return {
            "queue": self.queue.counts(),
            "dead_letters": self.queue.dead_letters(5),
            "processed": self.processed,
            "failures": self.failures,
            "paused": self.paused,
            "gate_pass_rate": round(passed / chunks, 3) if chunks else None,
            "counters": counters,
            "cost_today": self.extraction.ledger.today(),
            "daily_budget_usd": self.config.daily_budget_usd,
        }
