"""Wiring of the agent hooks: bridges.hooks.HookService over tap's real store and pipeline.

Two places run the service:
- `tap serve` (tap.wiring.hook_endpoint): the server's interception core (its recall, `tap why`
  records and counters), memory service, ingestor and queue (`RuntimeBackend`), behind
  `POST /tap/hooks/{event}`;
- a standalone `tap hook` process when no server runs (`run_embedded`): `EmbeddedBackend` opens
  only what the event needs — the store and embedder for SessionStart / UserPromptSubmit (which
  takes the data-dir lock and seconds; store.* is imported only then), recalled through an
  interception core of its own (the same policy; its record ends with the process), the queue
  alone for Stop, PreCompact and SessionEnd (well inside SessionEnd's short budget) — and after a
  capture starts a detached `tap hooks drain` that extracts the new chunks (waiting its turn for
  the data-dir lock, so a drain never runs beside another process that holds the store).

Both hand the context events to the core the same way (`CoreBlocks`: Interceptor.recall_turn,
with tap.recall.digest.StartDigest for SessionStart); `tap serve` runs it on its event loop from
the hook's worker thread, a standalone hook on a loop of its own.

Transcripts are read by the log-tail's own reader (bridges.logtail.Tailer, format `claude-code`)
with its offsets kept apart from the log-tail's, in `<data dir>/hooks.db`: both readers may see the
same session, and the queue keeps one copy of each (scope, conversation, turn id) — the ids are
the transcript's uuids and the conversation its session id in both. The scope is the hook's (see
bridges.hooks.scope); the log-tail's default scope is the session's `cwd`, which is the same path
whenever the agent runs at the repository root.
"""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import msgspec

from bridges.hooks.command import Invocation
from bridges.hooks.hook_db import STATE_FILE, HookState
from bridges.hooks.hook_session import HookService
from bridges.hooks.hooklog import log_line
from bridges.hooks.payload import parse_input
from bridges.logtail import OffsetStore, Tailer
from tap.admin_token import read_server_info
from tap.config import LoadedConfig
from tap.errors import StoreError
from tap.ingest.entry import Ingestor
from tap.ingest.queue import ChunkQueue
from tap.intercept.conversations import ConversationResolver
from tap.intercept.core import Interceptor, Recaller, TurnRecall
from tap.intercept.repeats import Skip
from tap.ports import Embedder, MemoryStore
from tap.recall.digest import CurrentMemories, StartDigest, newest_statements
from tap.recall.engine import RecallEngine
from tap.records import IngestEvent, Memory
from tap.runtime.metrics import Metrics
from tap.wiring.agent_config import load_hook_config

log = logging.getLogger("tap.hooks")
DRAIN_WAIT_S = 300.0


class TranscriptReader:
    """Claude Code transcript lines since the last offset → the ingest function, as `hook` events."""

    def __init__(self, offsets: OffsetStore, ingest: Callable[[IngestEvent], int]) -> None:
        self._offsets = offsets
        self._ingest = ingest
        self._lock = threading.Lock()

    def __call__(self, path: Path, scope: str) -> int:
        """Read what is new in `path` into `scope`; returns the new turns queued (ValueError if unreadable)."""
        with self._lock:  # one read at a time (each takes milliseconds): no two read the same lines at once
            tailer = Tailer([], self._offsets, self._sink, fmt="claude-code", scope=scope)
            tailer.read_file(path, one_shot=True)
        if tailer.stats.errors:
            raise ValueError(f"cannot read {path}: {'; '.join(tailer.stats.errors.values())}")
        return tailer.stats.turns

    def _sink(self, events: Sequence[IngestEvent]) -> int:
        return sum(self._ingest(msgspec.structs.replace(event, source="hook")) for event in events)


@dataclass
class Pipeline:
    """The capture side: ingestion, the queue's windows, transcripts."""

    queue: ChunkQueue
    ingestor: Ingestor
    reader: TranscriptReader


class CoreBlocks:
    """The context events' blocks through the interception core (Interceptor.recall_turn).

    `run` runs a coroutine of the core to its end from the calling thread: on the server's event
    loop from the hook's worker thread, or on a loop of its own in a standalone hook process.
    `deadline_ms`: a prompt's recall deadline (None: the proxy's, `[recall] deadline_ms`);
    `start_deadline_ms`: the session-start digest's (None: the same), which reads up to
    tap.recall.digest.START_CANDIDATES memories and holds up no model request."""

    def __init__(
        self,
        interceptor: Interceptor,
        current: CurrentMemories,
        run: Callable[[Coroutine[None, None, TurnRecall]], TurnRecall],
        *,
        deadline_ms: int | None = None,
        start_deadline_ms: int | None = None,
    ) -> None:
        self.interceptor = interceptor
        self.current = current
        self._run = run
        self.deadline_ms = deadline_ms
        self.start_deadline_ms = start_deadline_ms or deadline_ms

    def prompt_block(self, prompt: str, *, event: str, scope: str, session: str, turn: str, skip: Skip) -> TurnRecall:
        return self._block(prompt, event, scope, session, turn, skip, self.deadline_ms)

    def start_block(self, *, event: str, scope: str, session: str, turn: str, budget: int, skip: Skip) -> TurnRecall:
        digest = StartDigest(self.current, budget)
        return self._block("", event, scope, session, turn, skip, self.start_deadline_ms, digest)

    def _block(
        self,
        text: str,
        event: str,
        scope: str,
        session: str,
        turn: str,
        skip: Skip,
        deadline_ms: int | None,
        recaller: Recaller | None = None,
    ) -> TurnRecall:
        recall = self.interceptor.recall_turn(
            text,
            scope=scope,
            conversation=session,
            turn_key=turn,
            path=f"/tap/hooks/{event}",
            skip=skip,
            deadline_ms=deadline_ms,
            recaller=recaller,
        )
        return self._run(recall)


def on_loop(loop: asyncio.AbstractEventLoop) -> Callable[[Coroutine[None, None, TurnRecall]], TurnRecall]:
    """Run a coroutine on `loop` (another thread's) and wait for its result here."""
    return lambda coroutine: asyncio.run_coroutine_threadsafe(coroutine, loop).result()


class _Backend:
    """What both `HookBackend`s do alike: the context events through the CoreBlocks a backend
    opens (`_core`), the capture side through its Pipeline (`_capture`)."""

    def _core(self) -> CoreBlocks:
        raise NotImplementedError

    def _capture(self) -> Pipeline:
        raise NotImplementedError

    def prompt_block(self, prompt: str, *, event: str, scope: str, session: str, turn: str, skip: Skip) -> TurnRecall:
        return self._core().prompt_block(prompt, event=event, scope=scope, session=session, turn=turn, skip=skip)

    def start_block(self, *, event: str, scope: str, session: str, turn: str, budget: int, skip: Skip) -> TurnRecall:
        return self._core().start_block(event=event, scope=scope, session=session, turn=turn, budget=budget, skip=skip)

    def ingest(self, event: IngestEvent) -> int:
        return self._capture().ingestor.ingest(event)

    def read_transcript(self, path: Path, scope: str) -> int:
        return self._capture().reader(path, scope)

    def close_conversation(self, scope: str, conversation: str) -> int:
        return self._capture().queue.flush(scope=scope, conversation=conversation)


class RuntimeBackend(_Backend):
    """`HookBackend` over open components (the server's runtime and interception core)."""

    def __init__(self, blocks: CoreBlocks, pipeline: Pipeline, extract_soon: Callable[[], None] = lambda: None) -> None:
        self._blocks = blocks
        self._pipeline = pipeline
        self._extract_soon = extract_soon

    def _core(self) -> CoreBlocks:
        return self._blocks

    def _capture(self) -> Pipeline:
        return self._pipeline

    def extract_soon(self) -> None:
        self._extract_soon()


# -- a standalone hook process -----------------------------------------------------------------------


class EmbeddedBackend(_Backend):
    """`HookBackend` that opens only what an event uses, in this process (no server runs)."""

    def __init__(self, loaded: LoadedConfig) -> None:
        self.loaded = loaded
        self._closers: list[Callable[[], None]] = []
        self.chunks_queued = 0

    @cached_property
    def _embedder(self) -> Embedder:
        from store.embedders import make_embedder

        return make_embedder(self.loaded.config.embedder)

    @cached_property
    def _store(self) -> MemoryStore:
        # the store and the embedder (chromadb, onnxruntime: seconds) only for the events that recall
        from store.chroma import ChromaStore

        config = self.loaded.config
        store = ChromaStore(
            data_dir=self.loaded.data_dir,
            url=config.store.url,
            collection=config.store.collection,
            embedder_id=self._embedder.model_id,
            dimensions=self._embedder.dimensions,
        )
        self._closers.append(store.close)
        return store

    @cached_property
    def _recall_engine(self) -> RecallEngine:
        config = self.loaded.config
        engine = RecallEngine(self._store, self._embedder, config.recall, access_counts=self._store)
        self._closers.append(engine.close)
        self._closers.append(lambda: None if engine.flush_access() else None)  # closers run last-in first-out
        return engine

    @cached_property
    def _blocks(self) -> CoreBlocks:
        config = self.loaded.config
        interceptor = Interceptor(
            config, recall=self._recall_engine, metrics=Metrics(), conversations=ConversationResolver()
        )
        deadline_ms = int(config.hooks.embedded_timeout_s * 1000)  # the process's own limit is the real one
        return CoreBlocks(interceptor, self.current_memories, asyncio.run, deadline_ms=deadline_ms)

    @cached_property
    def _pipeline(self) -> Pipeline:
        extract = self.loaded.config.extract
        queue = ChunkQueue(
            self.loaded.data_dir / "queue.db", chunk_tokens=extract.chunk_tokens, overlap_tokens=extract.overlap_tokens
        )
        self._closers.append(queue.close)
        offsets = OffsetStore(self.loaded.data_dir / STATE_FILE)
        self._closers.append(offsets.close)
        ingestor = Ingestor(queue)
        return Pipeline(queue, ingestor, TranscriptReader(offsets, ingestor.ingest))

    def _core(self) -> CoreBlocks:
        return self._blocks

    def current_memories(self, scope: str, limit: int) -> list[Memory]:
        """The scope's active statements, newest first (for the session-start digest)."""
        return newest_statements(self._store, scope, limit)

    def _capture(self) -> Pipeline:
        return self._pipeline

    def extract_soon(self) -> None:
        self.chunks_queued += 1

    def close(self) -> None:
        """Release what was opened (the store's data-dir lock last)."""
        while self._closers:
            try:
                self._closers.pop()()
            except Exception:
                log.exception("closing a hook resource failed")


def run_embedded(invocation: Invocation, body: bytes) -> bytes:
    """Handle one event in this process (no server runs): the answer body (empty: nothing to add)."""
    loaded = load_hook_config(invocation.config)
    payload = parse_input(body)
    state = HookState(loaded.data_dir / STATE_FILE)
    backend = EmbeddedBackend(loaded)
    try:
        service = HookService(loaded.config.hooks, backend, state)
        reply = service.handle(invocation.event, invocation.agent, payload)
        service.commit(invocation.event, invocation.agent, reply)
    finally:
        backend.close()
        state.close()
    if backend.chunks_queued:
        spawn_drain(loaded)
    return msgspec.json.encode(reply.output) if reply.output else b""


def spawn_drain(loaded: LoadedConfig) -> None:
    """Start `tap hooks drain` detached (its own session, no terminal), so this hook can exit now.

    It runs in the data dir with the hook's config named explicitly (or none there to find), so it
    never picks up the project's `./config.toml` either."""
    args = [sys.executable, "-m", "tap"]
    if loaded.path is not None:
        args += ["--config", str(loaded.path.resolve())]
    subprocess.Popen(
        [*args, "hooks", "drain"],
        cwd=loaded.data_dir,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )


def drain(loaded: LoadedConfig, *, wait_s: float = DRAIN_WAIT_S) -> int:
    """Extract every ready chunk with the embedded store, waiting up to `wait_s` for the data-dir lock.

    Returns the chunks processed (0 when a server runs: its worker drains the queue itself).
    """
    from tap.wiring.runtime import open_runtime  # the whole runtime: only this background process needs it

    deadline = time.monotonic() + wait_s
    while not _lock_free(loaded):
        if read_server_info(loaded.data_dir) is not None or time.monotonic() > deadline:
            return 0
        time.sleep(0.5)
    if read_server_info(loaded.data_dir) is not None:
        return 0
    try:
        rt = open_runtime(loaded)
    except StoreError as exc:
        log_line(loaded.data_dir, f"hooks drain: {exc}; the chunks stay queued")
        return 0
    done = 0
    try:
        while processed := rt.worker.drain(flush=False):
            done += processed
    finally:
        rt.close()
    return done


def _lock_free(loaded: LoadedConfig) -> bool:
    from store.lock import DataDirLock

    if loaded.config.store.url:
        return True  # a Chroma server: no data-dir lock
    lock = DataDirLock(loaded.data_dir)
    try:
        lock.acquire()
    except StoreError:
        return False
    lock.release()
    return True
