"""ExtractionWorker: drains the durable queue, one chunk at a time, with retries and dead letters.

Inside `tap serve` it runs as a background task (`run`): it closes idle conversation windows into
chunks, claims the oldest ready chunk, processes it in a worker thread and records the outcome;
`drain` does the same synchronously until nothing is ready (`tap extract run`).

- Batches: with the offline pipeline up to BATCH_CHUNKS chunks are claimed at once and written
  through a tap.extract.write_batch.WriteBuffer (one add and one update for the batch), their
  texts embedded ahead (`VectorCache.prefetch`). A chunk is done only after the flush; a failed
  flush retries the whole batch (memory ids are deterministic: nothing is doubled). With an LLM in
  the pipeline a batch is one chunk, so a crash never repeats paid calls.
- Failures are per chunk, never fatal: a retryable provider error backs off (or waits the server's
  retry-after) and is a dead letter after `max_attempts`; a non-retryable one is dead at once; a
  spent daily budget postpones the chunk to UTC midnight without counting an attempt. Dead letters
  show in `tap status`; `tap extract retry` requeues them.
- A store or embedder outage (the probe fails too) costs no attempt: the batch is postponed with a
  backoff doubling up to MAX_OUTAGE_BACKOFF_S (`waiting_for_store` says why). Repeated failures log
  one line with a count (tap.runtime.repeatlog).
- Inside `tap serve` a batch waits while requests are being relayed, up to GAP_WAIT_MAX_S, or
  starts at once when a whole batch is ready, its writes paced (tap.runtime.priority): an embedded
  Chroma write holds the GIL and stalls the streams (docs/measurements.md). Nothing waits in
  memory: the chunks stay in the durable queue.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import random
import time
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any

import msgspec

from tap.config import ExtractConfig
from tap.errors import EmbedderError, OutOfSpace, ProviderError, StoreError
from tap.extract.pipeline import BudgetExhausted, Extraction, asks_to_forget
from tap.extract.status import extraction_status
from tap.extract.write_batch import VectorCache, WriteBuffer
from tap.ingest.queue import ChunkQueue, QueuedChunk
from tap.plural import plural
from tap.runtime.allocator import release_free_memory
from tap.runtime.diskspace import out_of_space
from tap.runtime.priority import lower_thread_priority, quiet_for, relaying, wait_for_gap
from tap.runtime.repeatlog import RepeatLog
from tap.scrub import scrub

log = logging.getLogger(__name__)
MAX_BACKOFF_S = 3600.0
MAX_OUTAGE_BACKOFF_S = 30.0
MIN_OUTAGE_BACKOFF_S = 0.05
OUTAGE_ERRORS = (StoreError, EmbedderError)
BATCH_CHUNKS = 32
CHUNKS_PER_EMBED = 4  # texts of this many chunks per embedder call: enough to keep every core busy
GAP_WAIT_MAX_S = 30.0  # how long a batch waits for no request to be relayed (see the module docstring)
GAP_POLL_S = 0.05
RELEASE_QUIET_S = 2.0  # idle inside tap serve: no request relayed for this long before free memory goes back


def rescrubbed(item: QueuedChunk) -> QueuedChunk:
    """The chunk with its turns scrubbed again by the current scrubber (tap.scrub): a chunk queued
    before a pattern was added gets it too, before any text reaches an extractor or the store."""
    turns = [msgspec.structs.replace(t, text=scrub(t.text)) for t in item.chunk.turns]
    if all(new.text == old.text for new, old in zip(turns, item.chunk.turns, strict=True)):
        return item
    return QueuedChunk(chunk=msgspec.structs.replace(item.chunk, turns=turns), attempts=item.attempts)


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
        self.waiting_for_store: str = ""
        self.waiting_for_gap = False
        self.processed = 0
        self.failures = 0
        self.postponed_for_outage = 0
        self._vectors: VectorCache | None = None
        self._outage_delay = 0.0
        self._log = RepeatLog(log)

    def backoff(self, attempts: int, retry_after: float | None) -> float:
        """Seconds before the next try: exponential with jitter, at least the server's hint."""
        delay: float = min(MAX_BACKOFF_S, self.config.backoff_s * 2.0**attempts) * random.uniform(0.8, 1.2)
        return max(delay, retry_after or 0.0)

    def batch_size(self) -> int:
        """Chunks per batch: one when an LLM is in the pipeline, else BATCH_CHUNKS."""
        llm = self.extraction.gate_provider is not None or self.extraction.extract_provider is not None
        return 1 if llm else BATCH_CHUNKS

    def run_batch(self, limit: int | None = None) -> int:
        """Process up to `limit` ready chunks (oldest first) with buffered writes; returns how many."""
        claimed: list[QueuedChunk] = []
        while len(claimed) < (limit or self.batch_size()) and (item := self.queue.claim()) is not None:
            claimed.append(rescrubbed(item))
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
            except Exception as exc:  # the per-chunk path below meets the same fault and records it per chunk
                self._log.failed(
                    "plan", "planning %d chunks ahead failed; processing them one by one", len(claimed), exc=exc
                )
        finished: list[tuple[QueuedChunk, str]] = []
        outage: Exception | None = None
        try:
            for item in claimed:
                if outage is not None:  # the store is down: the rest of the batch waits with it
                    self._wait_for_store(item.chunk.id, outage)
                    continue
                try:
                    outcome = self._process(extraction, item)
                except OUTAGE_ERRORS as exc:
                    outage = self._start_outage(exc)
                    self._wait_for_store(item.chunk.id, exc)
                    continue
                if outcome is not None:
                    finished.append((item, outcome))
        finally:
            vectors.discard_pending()
        try:
            buffer.flush()
        except Exception as exc:  # nothing of this batch is done: all of it goes back
            if out_of_space(exc) or (isinstance(exc, OUTAGE_ERRORS) and not self._reachable()):
                if outage is None:
                    self._start_outage(exc)
                for item, _ in finished:
                    self._wait_for_store(item.chunk.id, exc)
            else:
                self._log.failed("flush", "writing the memories of %s failed", plural(len(finished), "chunk"), exc=exc)
                for item, _ in finished:
                    self._failed(item.chunk.id, item.attempts, exc, True, None)
            return len(claimed)
        forget_failed: Exception | None = None
        if finished and outage is None:
            self._store_back()
            forget_failed = self._forget_asked()
        for item, outcome in finished:
            if forget_failed is not None and asks_to_forget(item.chunk):
                self._failed(item.chunk.id, item.attempts, forget_failed, True, None)  # asked again on the redo
                continue
            self.processed += 1
            self.queue.done(item.chunk.id, outcome)
        if not relaying():  # a batch's temporaries, freed across threads' arenas (tap.runtime.allocator)
            release_free_memory()
        return len(claimed)

    def _forget_asked(self) -> Exception | None:
        """Carry out what users asked, in the batch's chunks, to be forgotten (Extraction.forget_asked);
        the error when that failed (the store failing mid-way): the chunks that asked then go back to
        the queue instead of being done, and their redo asks again (nothing is lost if tap stops)."""
        try:
            self.extraction.forget_asked()
        except Exception as exc:
            self.extraction.drop_forget_asks()
            self._log.failed("forget", "forgetting what a user asked to forget failed; its chunk is redone", exc=exc)
            return exc
        return None

    def _reachable(self) -> bool:
        """Whether the store and the embedder answer right now (a cheap read and one short embed)."""
        try:
            self.extraction.store.get(["tap-outage-probe"])
            self.extraction.embedder.embed_query("probe")
        except Exception:
            return False
        return True

    def _start_outage(self, exc: Exception) -> Exception:
        """The store or embedder is down: the next wait doubles (up to MAX_OUTAGE_BACKOFF_S)."""
        base = max(self.config.backoff_s, MIN_OUTAGE_BACKOFF_S)
        self._outage_delay = min(MAX_OUTAGE_BACKOFF_S, self._outage_delay * 2 if self._outage_delay else base)
        self.waiting_for_store = f"{type(exc).__name__}: {exc}"[:500]
        self._log.failed(
            "outage",
            "the memory store or embedder is unavailable; chunks wait (no attempt counted) and retry in %.1f s",
            self._outage_delay,
            exc=exc,
        )
        return exc

    def _wait_for_store(self, chunk_id: str, exc: Exception) -> None:
        delay = self._outage_delay * random.uniform(0.8, 1.2)
        self.postponed_for_outage += 1
        self.queue.postpone(chunk_id, self._now() + delay, f"waiting for the store: {type(exc).__name__}: {exc}"[:2000])

    def _store_back(self) -> None:
        if self.waiting_for_store:
            self._log.recovered("outage", "the memory store is back; extraction goes on")
        self.waiting_for_store = ""
        self._outage_delay = 0.0

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
        except OUTAGE_ERRORS as exc:
            if out_of_space(exc) or not self._reachable():
                raise  # an outage: run_batch postpones this chunk and the rest of the batch
            self._log.failed("chunk", "extraction of chunk %s failed", chunk.id, exc=exc, level=logging.ERROR)
            self._failed(chunk.id, item.attempts, exc, True, None)
            return None
        except Exception as exc:  # a bug, ...: keep the chunk, retry later
            if out_of_space(exc):  # the disk, not the chunk: an outage (no attempt counted)
                raise OutOfSpace(f"{type(exc).__name__}: {exc}") from exc
            self._log.failed("chunk", "extraction of chunk %s failed", chunk.id, exc=exc, level=logging.ERROR)
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

    async def run(self, stop: asyncio.Event, executor: Executor | None = None) -> None:
        """Background loop for `tap serve`, on its own low-priority thread (tap.runtime.priority) so that
        the proxy's event loop and recall win every contest for a core; returns soon after `stop`.
        `executor`: a one-thread low-priority executor shared with other background store work
        (consolidation), so their writes never interleave; by default the worker makes its own."""
        loop = asyncio.get_running_loop()
        own = executor is None
        thread = executor or ThreadPoolExecutor(1, "tap-extract", initializer=lower_thread_priority)
        try:
            while not stop.is_set():
                try:
                    await loop.run_in_executor(thread, lambda: self.queue.flush(idle_s=self.flush_idle_s))
                    if relaying() and not await loop.run_in_executor(thread, self._batch_ready):
                        if await self._gap(stop):  # a backlog is worked through, paced, not left to grow
                            return
                    worked = await loop.run_in_executor(thread, self.run_batch) > 0
                    if not worked and quiet_for(RELEASE_QUIET_S):  # idle: what requests freed goes back
                        await loop.run_in_executor(thread, release_free_memory)
                except Exception as exc:
                    self._log.failed("step", "extraction worker step failed", exc=exc, level=logging.ERROR)
                    worked = False
                    # what the failed step claimed goes back (a full disk can fail the postpone too)
                    with contextlib.suppress(Exception):
                        await loop.run_in_executor(thread, self.queue.release_running)
                if not worked:
                    try:
                        await asyncio.wait_for(stop.wait(), self.poll_s)
                    except TimeoutError:
                        pass
        finally:
            if own:
                thread.shutdown(wait=False)  # never block the event loop on a batch still running

    def _batch_ready(self) -> bool:
        """Whether a whole batch of chunks is ready (a SQLite read: on the worker's thread)."""
        return self.queue.ready(self.batch_size()) >= self.batch_size()

    async def _gap(self, stop: asyncio.Event) -> bool:
        """Wait while requests are relayed, at most GAP_WAIT_MAX_S (see the module docstring); True
        when `stop` was set meanwhile."""
        self.waiting_for_gap = True
        try:
            return await wait_for_gap(
                stop, quiet_s=0.0, give_up_at=time.monotonic() + GAP_WAIT_MAX_S, poll_s=GAP_POLL_S
            )
        finally:
            self.waiting_for_gap = False

    def status(self) -> dict[str, Any]:
        """Queue depth, dead letters, gate counters, spend today (tap.extract.status)."""
        return extraction_status(
            self.queue,
            self.extraction.ledger,
            self.config,
            counters=self.extraction.counters,
            processed=self.processed,
            failures=self.failures,
            paused=self.paused,
            waiting_for_store=self.waiting_for_store,
            waiting_for_gap=self.waiting_for_gap,
            postponed_for_outage=self.postponed_for_outage,
        )
