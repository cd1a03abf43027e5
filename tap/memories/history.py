"""A memory's history: every version of it, oldest first, and the conversation turns each came from.

Versions are linked three ways (tap.records): `supersedes` / `superseded_by` (an edit, a reconcile
update, a settled conflict) and `merged_from` (a consolidation merge: one new memory folds in
several, each of which is then superseded by it). The history of a memory is everything connected
to it through those links, so forgetting a memory forgets every version it was built from and every
version built from it (tap.memories.service.MemoryService.forget_memory walks the same set).

Order: oldest first, as the links say (an older version always comes before a version that
replaces or merges it); versions the links do not order come by creation time.

Turns: each version cites its source turns (`sources`) in its conversation; their text is looked
up in the turn log (exchanges the proxy, mitmproxy and Telegram captured) and in the extraction
queue (what was ingested, until `[data] retention_days` prunes it). A turn no longer kept is left
out: the version still says which turn ids it came from.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import msgspec

from tap.memories.conflicts import live
from tap.memories.views import memory_view
from tap.records import Memory, SourceTurn

MAX_VERSIONS = 1000  # a bound on the walk; real histories are a handful of versions


class VersionReader(Protocol):
    """What walking the versions reads: memories by id, superseded ones too (a MemoryReader, or the
    CLI's read view of the store)."""

    def get(self, ids: Sequence[str]) -> list[Memory]:
        """The memories with these ids that exist, in the order asked."""
        ...


class TurnSource(Protocol):
    """A file that keeps conversation turns by id (the turn log, the extraction queue)."""

    def source_turns(self, scope: str, conversation: str, turn_ids: set[str]) -> list[SourceTurn]:
        """The turns with these ids it still holds (any order)."""
        ...


def _links(memory: Memory) -> list[str]:
    return [i for i in (memory.supersedes, memory.superseded_by, *memory.merged_from) if i]


def versions(store: VersionReader, memory_id: str) -> list[Memory]:
    """Every version connected to the memory, oldest first (empty when the id is unknown)."""
    found: dict[str, Memory] = {}
    frontier = [memory_id]
    while frontier and len(found) < MAX_VERSIONS:
        fetched = store.get([i for i in dict.fromkeys(frontier) if i not in found])
        for memory in fetched:
            found[memory.id] = memory
        frontier = [i for m in fetched for i in _links(m) if i not in found]
    return order(found.values())


def order(memories: Iterable[Memory]) -> list[Memory]:
    """Versions oldest first: each after every version it replaces or merges (a topological order),
    ties by creation time, then id."""
    by_id = {m.id: m for m in memories}
    after: dict[str, set[str]] = {i: set() for i in by_id}  # id -> the versions that come after it
    for memory in by_id.values():
        older = [memory.supersedes, *memory.merged_from]
        edges = [(o, memory.id) for o in older if o in by_id]
        if memory.superseded_by in by_id:
            edges.append((memory.id, memory.superseded_by))
        for old, new in edges:
            if old != new:
                after[old].add(new)
    waiting = {i: 0 for i in by_id}
    for followers in after.values():
        for i in followers:
            waiting[i] += 1

    def key(i: str) -> tuple[float, str]:
        return (by_id[i].created_at, i)

    ready = [key(i) for i, n in waiting.items() if n == 0]
    heapq.heapify(ready)
    out: list[Memory] = []
    while ready:
        _, i = heapq.heappop(ready)
        out.append(by_id[i])
        for follower in after[i]:
            waiting[follower] -= 1
            if waiting[follower] == 0:
                heapq.heappush(ready, key(follower))
    placed = {m.id for m in out}
    out += sorted((m for m in by_id.values() if m.id not in placed), key=lambda m: key(m.id))  # a cycle: never written
    return out


def version_turns(chain: Sequence[Memory], sources: Sequence[TurnSource]) -> dict[str, list[SourceTurn]]:
    """For each version id, the turns it cites that are still kept, in the order it cites them. A
    merged version cites turns of its members' conversations, so every conversation of the history
    is looked in."""
    conversations = {(m.scope, m.conversation) for m in chain if m.conversation}
    wanted = {t for m in chain for t in m.sources}
    known: dict[str, SourceTurn] = {}
    for scope, conversation in sorted(conversations):
        for source in sources:
            missing = wanted - known.keys()
            if not missing:
                break
            for turn in source.source_turns(scope, conversation, missing):
                known.setdefault(turn.id, turn)
    return {m.id: [known[t] for t in m.sources if t in known] for m in chain}


def history(
    store: VersionReader, sources: Sequence[TurnSource], memory_id: str
) -> tuple[list[Memory], dict[str, list[SourceTurn]]]:
    """Every version of the memory, oldest first, as `live` shows them, and for each the source
    turns the sources still keep (in their order); ([], {}) when the id is unknown."""
    chain = live(versions(store, memory_id), store.get)
    return chain, version_turns(chain, sources)


def history_view(chain: Sequence[Memory], turns: dict[str, list[SourceTurn]]) -> list[dict[str, Any]]:
    """The history as JSON: each version's memory view plus `current` and its `turns`."""
    return [{**memory_view(m), "current": m.current, "turns": msgspec.to_builtins(turns.get(m.id, []))} for m in chain]
