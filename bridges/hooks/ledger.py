"""The hook path's per-session ledger: tap.intercept.repeats.SessionLedger kept in step with hooks.db.

A hook's context is recorded in the transcript and sent again on every later turn, so a memory
given to a session once is not given again — until a compaction or a clear drops that context
(`reset`). `SessionLedger` (the core's bounded in-memory ledger) answers in `tap serve`; the rows
in hooks.db (bridges.hooks.hook_db) make it survive a restart and let one-process-per-event hooks
(no server) share it. A session is loaded from the database the first time this process asks.
"""

from __future__ import annotations

from collections.abc import Iterable

from bridges.hooks.hook_db import HookState
from tap.intercept.repeats import MAX_SESSIONS, SessionLedger, Skip
from tap.lru import LRU


class HookLedger:
    """`given` / `skip` / `record` / `reset` per session, in memory and in hooks.db."""

    def __init__(self, state: HookState, max_sessions: int = MAX_SESSIONS) -> None:
        self._state = state
        self._memory = SessionLedger(max_sessions)
        self._loaded: LRU[str, bool] = LRU(max_sessions)

    def given(self, session: str) -> frozenset[str]:
        """The memory ids given to `session` since it started or was last reset."""
        if not self._loaded.get(session):
            self._memory.reset(session)
            self._memory.record(session, self._state.given(session))
            self._loaded.put(session, True)
        return self._memory.given(session)

    def skip(self, session: str) -> Skip:
        """A recall predicate leaving out what `session` was already given."""
        given = self.given(session)
        return lambda memory: memory.id in given

    def record(self, session: str, ids: Iterable[str]) -> None:
        """Note that `ids` were given to `session`."""
        ids = list(ids)
        if not ids:
            return
        self.given(session)
        self._memory.record(session, ids)
        self._state.add_given(session, ids)

    def reset(self, session: str) -> None:
        """Forget `session` (after compaction or a clear its earlier context is gone)."""
        self._memory.reset(session)
        self._loaded.put(session, True)
        self._state.reset_given(session)
