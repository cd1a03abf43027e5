"""The session-start digest: a scope's essentials, as a source of blocks the interception core runs
under its own policy (tap.intercept.core.Interceptor.recall_turn: the deadline, degraded reasons,
the `tap why` record).

A new (or compacted, or cleared) agent context starts with the scope's most important current
statements: by importance, then recency; never superseded or archived ones, never verbatim
excerpts; chosen among the scope's newest START_CANDIDATES statements, minus what `skip` leaves
out (what the session already holds), packed in the recall block format into the budget. It
answers no question, so the query is not used; its `tap why` record lists what it packed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from tap.ports import MemoryStore
from tap.recall.engine import is_excerpt, pack_block
from tap.recall.why import RecallTrace
from tap.records import Memory, RecallResult

START_CANDIDATES = 300
"""How many of the scope's newest statements the digest chooses from."""
DIGEST_QUERY = "(session start: the scope's most important memories)"
"""What a digest's `tap why` record shows as its query."""

CurrentMemories = Callable[[str, int], list[Memory]]
"""The scope's active statements, newest first, at most N (`newest_statements` over a store)."""


def newest_statements(store: MemoryStore, scope: str, limit: int) -> list[Memory]:
    """A scope's active statements (no excerpts), newest first, at most `limit`, read from the
    store's own index (`active_ids`, `get_active`) rather than listed from the vector store, which
    reads every memory of the scope (docs/measurements.md)."""
    statements = [m for m in store.get_active(store.active_ids(scope)) if not is_excerpt(m)]
    statements.sort(key=lambda m: (m.created_at, m.id), reverse=True)
    return statements[:limit]


def by_importance(memories: list[Memory]) -> list[tuple[Memory, float]]:
    """Active statements by importance, then recency (a score that orders them so for pack_block)."""
    statements = [m for m in memories if m.active and not is_excerpt(m)]
    newest = max((m.valid_from or m.created_at for m in statements), default=0.0) or 1.0
    return sorted(
        ((m, m.importance + (m.valid_from or m.created_at) / newest / 2) for m in statements),
        key=lambda pair: (-pair[1], pair[0].id),
    )


class StartDigest:
    """A recaller (tap.intercept.core.Recaller) that answers with the scope's essentials."""

    def __init__(self, current: CurrentMemories, budget_tokens: int) -> None:
        self.current = current
        self.budget_tokens = budget_tokens

    async def recall_async(
        self,
        query: str,
        *,
        scope: str,
        deadline_ms: int | None = None,
        skip: Callable[[Memory], bool] | None = None,
        trace: RecallTrace | None = None,
    ) -> RecallResult:
        """The digest of `scope` (the query is ignored), within the deadline (TimeoutError past it)."""
        work = asyncio.to_thread(self.digest, scope, skip, trace)
        if deadline_ms is None:
            return await work
        return await asyncio.wait_for(work, deadline_ms / 1000)

    def digest(
        self, scope: str, skip: Callable[[Memory], bool] | None = None, trace: RecallTrace | None = None
    ) -> RecallResult:
        """The digest, here and now (blocking: it reads the store)."""
        started = time.perf_counter()
        ranked = by_importance(self.current(scope, START_CANDIDATES))
        kept = [(m, score) for m, score in ranked if skip is None or not skip(m)]
        result = pack_block(kept, self.budget_tokens)
        if trace is not None:
            trace.retrieved(DIGEST_QUERY, [], [], [], ranked, lambda m: (0.0, float(m.importance)))
            trace.packed(kept, result)
        result.elapsed_ms = (time.perf_counter() - started) * 1000
        return result
