"""MemoryService: the user-facing operations on memories (CLI, admin API, bridges).

It owns the rules that make history non-destructive: `edit` writes a new version and marks
the old one superseded; `chain` walks the versions; `forget` removes a memory with its whole
history (the user asked for it to be gone). `forget_scope` first drops the scope's conversation
not yet extracted from the queue and waits for a chunk of it that the worker is extracting right
then, so nothing the user asked to forget comes back as a memory later. Import validates each
JSONL line on its own, so one broken line is reported with its number and the rest still imports;
ids are kept and a record that already exists is left alone, which makes import idempotent.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import msgspec

from tap.ports import Embedder, MemoryStore, StoreStats
from tap.queue import ChunkQueue
from tap.recall import RecallEngine
from tap.records import Kind, Memory, RecallResult, make_memory
from tap.views import recall_view

log = logging.getLogger(__name__)
_IMPORT_BATCH = 64
SETTLE_S = 120.0  # a chunk in flight: up to two LLM calls of `[extract] timeout_s`


class ImportReport(msgspec.Struct, kw_only=True):
    """What `import` did: counts and one (line, reason) per rejected line."""

    imported: int = 0
    unchanged: int = 0
    errors: list[tuple[int, str]] = msgspec.field(default_factory=list)


class MemoryService:
    """Add, edit, forget, list, search, export and import memories."""

    def __init__(
        self,
        store: MemoryStore,
        embedder: Embedder,
        recall: RecallEngine,
        *,
        queue: ChunkQueue | None = None,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.recall_engine = recall
        self.queue = queue
        self._now = now

    def add(self, *, scope: str, content: str, **fields: Any) -> Memory:
        """Store one new memory (embedding it) and return it."""
        if not content.strip():
            raise ValueError("content is empty")
        memory = make_memory(scope=scope, content=content, now=self._now(), **fields)
        self.write([memory])
        return memory

    def write(self, memories: list[Memory]) -> None:
        """Embed and store memories as they are (ids kept)."""
        for memory in memories:
            memory.embedder = self.embedder.model_id
        vectors = self.embedder.embed_documents([m.content for m in memories])
        self.store.add(memories, vectors)

    def get(self, memory_id: str) -> Memory | None:
        """One memory by id (any version)."""
        found = self.store.get([memory_id])
        return found[0] if found else None

    def chain(self, memory_id: str) -> list[Memory]:
        """Every version of the memory, oldest first (empty when the id is unknown)."""
        current = self.get(memory_id)
        if current is None:
            return []
        older: list[Memory] = []
        cursor = current
        while cursor.supersedes and (prev := self.get(cursor.supersedes)) is not None:
            older.insert(0, prev)
            cursor = prev
        newer: list[Memory] = []
        cursor = current
        while cursor.superseded_by and (nxt := self.get(cursor.superseded_by)) is not None:
            newer.append(nxt)
            cursor = nxt
        return [*older, current, *newer]

    def edit(
        self,
        memory_id: str,
        *,
        content: str | None = None,
        kind: Kind | None = None,
        importance: int | None = None,
        tags: list[str] | None = None,
    ) -> Memory:
        """Write a new version of an active memory; the old one is kept, marked superseded."""
        old = self.get(memory_id)
        if old is None:
            raise KeyError(memory_id)
        if not old.active:
            raise ValueError(f"{memory_id} is superseded by {old.superseded_by}; edit the newest version")
        return self.supersede(
            old,
            content=old.content if content is None else content,
            kind=kind or old.kind,
            importance=old.importance if importance is None else importance,
            tags=old.tags if tags is None else tags,
            source=old.source,
        )

    def supersede(self, old: Memory, *, content: str, **fields: Any) -> Memory:
        """Replace `old` by a new version carrying its provenance; returns the new version."""
        if not content.strip():
            raise ValueError("content is empty")
        now = self._now()
        fields.setdefault("conversation", old.conversation)
        sources = list(dict.fromkeys([*old.sources, *fields.pop("sources", [])]))
        new = make_memory(scope=old.scope, content=content, sources=sources, now=now, **fields)
        new.supersedes = old.id
        new.created_at = old.created_at
        self.write([new])
        old.superseded_by = new.id
        old.updated_at = now
        self.store.update_metadata([old])
        return new

    def forget(self, memory_id: str) -> list[str]:
        """Delete the memory and every version of it; returns the ids removed."""
        ids = [m.id for m in self.chain(memory_id)]
        self.store.delete(ids)
        return ids

    def forget_scope(self, scope: str, *, settle_s: float = SETTLE_S) -> int:
        """Delete every memory of a scope and its queued conversation (Telegram `/forget all`).

        Blocks up to `settle_s` while the worker finishes a chunk of the scope it had already
        claimed (its memories are then deleted with the rest); returns the memories deleted.
        """
        if self.queue is not None:
            dropped = self.queue.drop_scope(scope)
            log.info("forgetting scope %s: dropped %d queued window(s) and chunk(s)", scope, dropped)
            if not self.queue.wait_settled(scope, settle_s):
                log.warning(
                    "forgetting scope %s: a chunk still being extracted after %.0f s may add memories", scope, settle_s
                )
        ids = [m.id for m in self.store.iter_memories(scope=scope)]
        return self.store.delete(ids)

    def list_memories(
        self,
        *,
        scope: str | None,
        limit: int = 50,
        offset: int = 0,
        all_versions: bool = False,
        excerpts: bool | None = None,
    ) -> list[Memory]:
        """Memories newest first (`excerpts`: None both layers, False statements, True excerpts)."""
        return self.store.list_memories(
            scope=scope, limit=limit, offset=offset, include_superseded=all_versions, excerpts=excerpts
        )

    def search(self, query: str, *, scope: str, limit: int = 20) -> list[tuple[Memory, float]]:
        """Hybrid-ranked memories for a query, without the token budget."""
        return self.recall_engine.search(query, scope=scope, limit=limit)

    def recall(self, text: str, *, scope: str, budget_tokens: int | None = None) -> RecallResult:
        """The block tap would inject for this text."""
        return self.recall_engine.recall(text, scope=scope, budget_tokens=budget_tokens)

    def recall_json(self, text: str, *, scope: str, budget_tokens: int | None = None) -> dict[str, Any]:
        """recall() as the JSON view the CLI and admin API print."""
        return recall_view(self.recall(text, scope=scope, budget_tokens=budget_tokens))

    def export(self, *, scope: str | None = None) -> Iterator[bytes]:
        """Whole records as JSONL lines (superseded versions included)."""
        for memory in self.store.iter_memories(scope=scope):
            yield msgspec.json.encode(memory) + b"\n"

    def import_lines(self, lines: Iterable[bytes | str]) -> ImportReport:
        """Import JSONL records; bad lines are reported by number, the rest imported."""
        report = ImportReport()
        batch: list[Memory] = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                batch.append(msgspec.json.decode(line, type=Memory))
            except msgspec.DecodeError as exc:
                report.errors.append((number, str(exc)))
                continue
            if len(batch) >= _IMPORT_BATCH:
                self._import_batch(batch, report)
                batch = []
        self._import_batch(batch, report)
        return report

    def _import_batch(self, batch: list[Memory], report: ImportReport) -> None:
        unique = list({m.id: m for m in batch}.values())
        existing = {m.id for m in self.store.get([m.id for m in unique])}
        fresh = [m for m in unique if m.id not in existing]
        report.unchanged += len(batch) - len(fresh)
        if fresh:
            self.write(fresh)
            report.imported += len(fresh)

    def stats(self) -> StoreStats:
        """Counts by scope and kind, and the size on disk."""
        return self.store.stats()
