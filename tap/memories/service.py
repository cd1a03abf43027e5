"""MemoryService: the user-facing operations on memories (CLI, admin API, bridges).

It owns the rules that make history non-destructive: `edit` writes a new version and marks
the old one superseded; `chain` walks the versions; `forget` removes a memory with its whole
history (the user asked for it to be gone), and with it its source turns: the verbatim excerpts of
those turns in the store, their exchanges in the turn log and their text still waiting in the
queue (`forget_memory` says how much went). `forget_scope` first drops the scope's conversation
not yet extracted from the queue and waits for a chunk of it that the worker is extracting right
then, so nothing the user asked to forget comes back as a memory later; `erase_scope` does the same
and also empties every other file that keeps something of the scope (the turn log, and the
`ScopeHolder`s the composition root adds: log-tail state, Telegram chat history), reporting per file.

Every way into the store goes through the one scrubber (tap.scrub): `add`, `edit` and import
scrub content, context and tags before anything is embedded or written (extraction works on turns
scrubbed at ingestion). Import validates each JSONL line on its own (tap.validate: ids, scopes,
timestamps a reader can show), so one broken line is reported with its number and the rest still
imports; ids are kept and a record that already exists is left alone, which makes import idempotent.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Protocol

import msgspec

from tap.extract.consolidation import Consolidator
from tap.ingest.queue import ChunkQueue
from tap.jsonbody import decode
from tap.memories.conflicts import Conflict, Settled, live, resolve, unresolved
from tap.memories.filtered_search import filtered_search
from tap.memories.history import TurnSource, history, versions
from tap.memories.views import recall_view
from tap.plural import plural
from tap.ports import Embedder, MemoryStore, StoreStats
from tap.recall.digest import newest_statements
from tap.recall.engine import RecallEngine
from tap.records import Kind, Memory, RecallResult, SourceTurn, make_memory
from tap.scrub import scrub
from tap.validate import memory_problem

log = logging.getLogger(__name__)
_IMPORT_BATCH = 64
SETTLE_S = 120.0  # a chunk in flight: up to two LLM calls of `[extract] timeout_s`


class ImportReport(msgspec.Struct, kw_only=True):
    """What `import` did: counts and one (line, reason) per rejected line."""

    imported: int = 0
    unchanged: int = 0
    errors: list[tuple[int, str]] = msgspec.field(default_factory=list)


class ScopeHolder(Protocol):
    """A file that keeps something per scope besides the store and the queue (the turn log, the
    log-tail state, the Telegram chat history); `erase_scope` empties each."""

    name: str

    def forget_scope(self, scope: str) -> int:
        """Delete what this file keeps of the scope; returns how many rows."""
        ...


class TurnHolder(ScopeHolder, TurnSource, Protocol):
    """A ScopeHolder that also knows single turns by id (the turn log)."""

    def exchange_turns(self, scope: str, conversation: str, turn_ids: set[str]) -> dict[str, str]:
        """These turns and the other turns of their exchanges (a user turn and its reply): id → text."""
        ...

    def forget_turns(self, scope: str, conversation: str, turn_ids: set[str]) -> int:
        """Delete what this file keeps of these turns; returns how many rows."""
        ...


class ScopeCount(msgspec.Struct, kw_only=True):
    """A scope and its active memories: statements and verbatim excerpts (`GET /tap/scopes`)."""

    scope: str
    memories: int
    excerpts: int


class Forgotten(msgspec.Struct, kw_only=True):
    """What `forget_memory` removed: the memory's versions, the excerpts of its source turns, and
    the source turns' rows in the turn log and the queue."""

    deleted: list[str] = msgspec.field(default_factory=list)
    excerpts: list[str] = msgspec.field(default_factory=list)
    source_turns: dict[str, int] = msgspec.field(default_factory=dict)


def _quotes(context: str, texts: list[str]) -> bool:
    """Whether a memory's context (an excerpt's lead-in, "Speaker: last words…") quotes one of the texts."""
    body = " ".join(context.split(": ", 1)[-1].split())
    return bool(body) and any(body in text for text in texts)


def clean(memory: Memory) -> Memory:
    """The memory with its content, context and tags scrubbed (the one scrubber, tap.scrub)."""
    memory.content = scrub(memory.content).strip()
    memory.context = scrub(memory.context)
    memory.tags = tuple(tag for tag in (scrub(t).strip() for t in memory.tags) if tag)
    return memory


class MemoryService:
    """Add, edit, forget, list, search, export and import memories."""

    def __init__(
        self,
        store: MemoryStore,
        embedder: Embedder,
        recall: RecallEngine,
        *,
        queue: ChunkQueue | None = None,
        turn_log: TurnHolder | None = None,
        holders: Sequence[ScopeHolder] = (),
        consolidator: Consolidator | None = None,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.recall_engine = recall
        self.queue = queue
        self.turn_log = turn_log
        self.holders = list(holders)
        self.consolidator = consolidator
        self.on_forget: list[Callable[[list[str], list[str]], object]] = []
        """Called with the ids of memories forgotten and the texts that went with them (their
        contents, their source turns) (e.g. tap.recall.why.WhyLog.forget_memories)."""
        self._now = now

    def add(self, *, scope: str, content: str, **fields: Any) -> Memory:
        """Store one new memory (scrubbed, then embedded) and return it; ValueError when nothing is
        left of the content."""
        cleaned = scrub(content).strip()
        if not cleaned:
            raise ValueError("content is empty" + (" once private spans are removed" if content.strip() else ""))
        memory = clean(make_memory(scope=scope, content=cleaned, now=self._now(), **fields))
        self.write([memory])
        return memory

    def write(self, memories: list[Memory]) -> None:
        """Embed and store memories as they are (ids kept)."""
        for memory in memories:
            memory.embedder = self.embedder.model_id
        vectors = self.embedder.embed_documents([m.content for m in memories])
        self.store.add(memories, vectors)

    def newest_statements(self, scope: str, limit: int) -> list[Memory]:
        """The scope's active statements (no excerpts), newest first, read from the store's own
        index (`active_ids`, `get_active`): a hook's start digest reads these on a session's first
        prompt, where listing the scope from the vector store took ~100 ms at 1,000 memories."""
        return newest_statements(self.store, scope, limit)

    def get(self, memory_id: str) -> Memory | None:
        """One memory by id (any version)."""
        found = self.store.get([memory_id])
        return found[0] if found else None

    def chain(self, memory_id: str) -> list[Memory]:
        """Every version of the memory, oldest first (empty when the id is unknown): the versions it
        replaced or merged, the versions those replaced, and so on, and the versions that replaced
        it (tap.memories.history.versions)."""
        return versions(self.store, memory_id)

    def edit(
        self,
        memory_id: str,
        *,
        content: str | None = None,
        kind: Kind | None = None,
        importance: int | None = None,
        tags: list[str] | None = None,
    ) -> Memory:
        """Write a new version of a current memory; the old one is kept, marked superseded. An
        archived memory's new version stays archived (restore it to have it recalled)."""
        old = self.get(memory_id)
        if old is None:
            raise KeyError(memory_id)
        if not old.current:
            raise ValueError(f"{memory_id} is superseded by {old.superseded_by}; edit the newest version")
        return self.supersede(
            old,
            content=old.content if content is None else content,
            kind=kind or old.kind,
            importance=old.importance if importance is None else importance,
            tags=old.tags if tags is None else tags,
            source=old.source,
            archived_at=old.archived_at,
        )

    def supersede(self, old: Memory, *, content: str, **fields: Any) -> Memory:
        """Replace `old` by a new version carrying its provenance; returns the new version."""
        content = scrub(content).strip()
        if not content:
            raise ValueError("content is empty")
        now = self._now()
        fields.setdefault("conversation", old.conversation)
        sources = list(dict.fromkeys([*old.sources, *fields.pop("sources", [])]))
        archived_at = float(fields.pop("archived_at", 0.0))
        new = clean(make_memory(scope=old.scope, content=content, sources=sources, now=now, **fields))
        new.supersedes = old.id
        new.created_at = old.created_at
        new.archived_at = archived_at
        self.write([new])
        old.superseded_by = new.id
        old.updated_at = now
        self.store.update_metadata([old])
        return new

    def forget(self, memory_id: str, *, from_worker: bool = False) -> list[str]:
        """Delete the memory and every version of it, and its source turns; returns the ids removed.
        `from_worker`: the extraction worker asks, and the chunks it is extracting lose the turns too."""
        return self.forget_memory(memory_id, from_worker=from_worker).deleted

    def forget_memory(self, memory_id: str, *, from_worker: bool = False) -> Forgotten:
        """`forget`, saying also which excerpts and how many source-turn rows went with it.

        The source turns are the turn ids in the versions' `sources` (of their conversation) and the
        other turns of their exchanges (the reply to a user turn): their verbatim excerpts (kind
        `episode`, every source among those turns) are deleted from the store, and so is the
        `context` of another memory that quotes one of them (an excerpt's lead-in); their exchanges
        go from the turn log, their text from the queue's windows and chunks.
        """
        chain = self.chain(memory_id)
        if not chain:
            return Forgotten()
        report = Forgotten(deleted=[m.id for m in chain])
        turns: dict[tuple[str, str], dict[str, str]] = {}
        for memory in chain:
            if memory.conversation and memory.sources:
                turns.setdefault((memory.scope, memory.conversation), {}).update(dict.fromkeys(memory.sources, ""))
        if self.turn_log is not None:
            turns = {key: self.turn_log.exchange_turns(*key, set(ids)) for key, ids in turns.items()}
        doomed = set(report.deleted)
        quoting: list[Memory] = []
        for (scope, conversation), ids in turns.items():
            related = [m for m in self.store.iter_memories(scope=scope) if m.conversation == conversation]
            for other in related:
                if (
                    other.id not in doomed
                    and other.kind == "episode"
                    and other.sources
                    and set(other.sources) <= ids.keys()
                ):
                    report.excerpts.append(other.id)
                    doomed.add(other.id)
            texts = [" ".join(t.split()) for t in ids.values() if t.strip()]
            texts += [" ".join(m.content.split()) for m in related if m.id in doomed]
            quoting += [m for m in related if m.id not in doomed and _quotes(m.context, texts)]
        for memory in quoting:
            memory.context = ""
        self.store.update_metadata(quoting)  # first: the delete leaves no trace of the text they held either
        self.store.delete([*report.deleted, *report.excerpts])
        said = [m.content for m in chain] + [t for ids in turns.values() for t in ids.values() if t.strip()]
        for hook in self.on_forget:
            hook([*report.deleted, *report.excerpts], said)
        for (scope, conversation), ids in turns.items():
            if self.turn_log is not None:
                count = self.turn_log.forget_turns(scope, conversation, set(ids))
                report.source_turns[self.turn_log.name] = report.source_turns.get(self.turn_log.name, 0) + count
            if self.queue is not None:
                count = self.queue.forget_turns(scope, conversation, set(ids), include_running=from_worker)
                report.source_turns["queue"] = report.source_turns.get("queue", 0) + count
        return report

    def forget_scope(self, scope: str, *, settle_s: float = SETTLE_S) -> int:
        """Delete every memory of a scope, its queued conversation and its turn log (Telegram
        `/forget all`, which clears its own chat history); returns the memories deleted."""
        return self.erase_scope(scope, settle_s=settle_s, holders=False)["memories"]

    def erase_scope(self, scope: str, *, settle_s: float = SETTLE_S, holders: bool = True) -> dict[str, int]:
        """Delete everything tap keeps of a scope, in every file; returns the rows removed per file.

        First the queue (its open windows and chunks; blocks up to `settle_s` while the worker
        finishes a chunk of the scope it had already claimed, whose memories then go with the
        rest), then the memories (store and lexical index), the turn log and (unless `holders` is
        False) every ScopeHolder.
        The queue keeps the ids of turns it has seen (hashes and message ids, no text), so a client
        that sends the old turns again does not bring them back.
        """
        counts: dict[str, int] = {}
        if self.queue is not None:
            counts["queue"] = self.queue.drop_scope(scope)
            dropped = plural(counts["queue"], "queued window or chunk", "queued windows and chunks")
            log.info("forgetting scope %s: dropped %s", scope, dropped)
            if not self.queue.wait_settled(scope, settle_s):
                log.warning(
                    "forgetting scope %s: a chunk still being extracted after %.0f s may add memories", scope, settle_s
                )
        ids = [m.id for m in self.store.iter_memories(scope=scope)]
        counts["memories"] = self.store.delete(ids)
        for holder in [*([self.turn_log] if self.turn_log is not None else []), *(self.holders if holders else [])]:
            counts[holder.name] = holder.forget_scope(scope)
        return counts

    def list_memories(
        self,
        *,
        scope: str | None,
        limit: int = 50,
        offset: int = 0,
        all_versions: bool = False,
        excerpts: bool | None = None,
        archived: bool | None = None,
    ) -> list[Memory]:
        """Memories newest first (`excerpts`: None both layers, False statements, True excerpts;
        `archived`: None archived ones too, True only them, False none); `conflicts_with` names only
        the partners still in conflict (tap.memories.conflicts.live)."""
        found = self.store.list_memories(
            scope=scope,
            limit=limit,
            offset=offset,
            include_superseded=all_versions,
            excerpts=excerpts,
            archived=archived,
        )
        return live(found, self.store.get)

    def count_memories(
        self,
        *,
        scope: str | None,
        all_versions: bool = False,
        excerpts: bool | None = None,
        archived: bool | None = None,
    ) -> int:
        """How many memories `list_memories` pages through with the same filter."""
        return self.store.count_memories(
            scope=scope, include_superseded=all_versions, excerpts=excerpts, archived=archived
        )

    def scopes(self) -> list[ScopeCount]:
        """Every scope with active memories, with its statements and excerpts counted."""
        return [ScopeCount(scope=s, memories=n, excerpts=e) for s, (n, e) in self.store.scope_counts().items()]

    def search(
        self,
        query: str,
        *,
        scope: str | None,
        limit: int = 20,
        excerpts: bool | None = None,
        archived: bool | None = False,
        all_versions: bool = False,
    ) -> list[tuple[Memory, float]]:
        """Hybrid-ranked memories for a query, without the token budget; every scope when scope is
        None. The filters are the listing's (tap.memories.filtered_search): by default the active
        memories of both layers, as recall sees them."""
        if excerpts is None and archived is False and not all_versions:
            if scope is not None:
                found = self.recall_engine.search(query, scope=scope, limit=limit)
            else:
                found = self.recall_engine.search_scopes(query, list(self.store.scope_counts()), limit=limit)
        else:
            found = filtered_search(
                self.recall_engine,
                self.store,
                self.embedder,
                query,
                scopes=[scope] if scope is not None else list(self.store.scope_counts()),
                limit=limit,
                excerpts=excerpts,
                archived=archived,
                all_versions=all_versions,
                now=self._now(),
            )
        shown = live([m for m, _ in found], self.store.get)
        return [(m, score) for m, (_, score) in zip(shown, found, strict=True)]

    def history(self, memory_id: str) -> tuple[list[Memory], dict[str, list[SourceTurn]]]:
        """Every version of the memory, oldest first, and for each the source turns still kept
        (the turn log, then the queue); ([], {}) when the id is unknown."""
        sources: list[TurnSource] = [s for s in (self.turn_log, self.queue) if s is not None]
        return history(self.store, sources, memory_id)

    def conflicts(self, *, scope: str | None = None) -> list[Conflict]:
        """Unresolved conflicts (pairs of active memories), newest first."""
        return unresolved(self.store.in_conflict(scope=scope), self.store.get)

    def resolve(self, keep: str, drop: str, *, both: bool = False) -> Settled:
        """Settle a conflict: keep one (the other is superseded by it) or, with `both`, both."""
        return resolve(self.store, keep, drop, both=both, now=self._now)

    def consolidate(
        self, *, scope: str | None = None, dry_run: bool = False, on_scope: Callable[[int, int], object] | None = None
    ) -> dict[str, Any]:
        """Merge near-duplicates and archive stale memories now (tap.extract.consolidation); the report as
        JSON (the shape of `POST /tap/consolidate`). `on_scope(done, total)` follows the scopes."""
        if self.consolidator is None:
            raise ValueError("this service has no consolidator")
        report = self.consolidator.run(scope, dry_run=dry_run, on_scope=on_scope)
        return msgspec.to_builtins(report)  # type: ignore[no-any-return]

    def archive(self, memory_id: str) -> Memory:
        """Set a current memory aside: still listed, never recalled, restorable (KeyError: unknown
        id; ValueError: a superseded version)."""
        memory = self._current(memory_id)
        if not memory.archived:
            memory.archived_at = memory.updated_at = self._now()
            self.store.update_metadata([memory])
        return memory

    def restore(self, memory_id: str) -> Memory:
        """Bring an archived memory back into recall (a memory not archived is returned as it is)."""
        memory = self._current(memory_id)
        if memory.archived:
            memory.archived_at = 0.0
            memory.updated_at = self._now()
            self.store.update_metadata([memory])
        return memory

    def _current(self, memory_id: str) -> Memory:
        memory = self.get(memory_id)
        if memory is None:
            raise KeyError(memory_id)
        if not memory.current:
            raise ValueError(f"{memory_id} is an old version (superseded by {memory.superseded_by})")
        return memory

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
                memory = clean(decode(line, Memory))
            except ValueError as exc:
                report.errors.append((number, str(exc)))
                continue
            problem = memory_problem(memory)
            if problem:
                report.errors.append((number, problem))
                continue
            batch.append(memory)
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

    def requeue_dead(self) -> int:
        """Give every dead-lettered chunk a fresh start (`tap extract retry`); returns how many."""
        if self.queue is None:
            raise ValueError("this service has no extraction queue")
        return self.queue.requeue_dead()

    def stats(self) -> StoreStats:
        """Counts by scope and kind, and the size on disk."""
        return self.store.stats()
