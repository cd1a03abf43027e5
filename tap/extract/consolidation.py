"""Consolidation: apply tap.extract.consolidation_plan's plans to the store, resumably, at low priority.

`Consolidator.consolidate_scope(scope)` reads the scope's active memories, plans (tap.extract.consolidation_plan)
and applies:
- a merge: first the new memory is written (citing every member's sources, `merged_from` naming
  them), then each member is marked superseded by it. Nothing is deleted: the members stay as the
  new memory's history (`tap memories show`);
- an archive: `archived_at` is set (the memory leaves recall and the lexical index; it stays
  listed and `tap memories restore ID` brings it back).

Crash safety: every step is written to a journal (`<data dir>/consolidate.db`) before it touches
the store and removed once it is done. The order of a merge's writes keeps the store consistent
at every point (a crash between the two leaves the new memory and its members all active: nothing
lost, nothing dangling), and the next run first finishes every step left in the journal
(`replay`). The merged memory's id is derived from its members, so a step done twice writes it
once. Scopes finished in a cycle are recorded too, so an interrupted cycle resumes with the scopes
it had not reached.

In `tap serve` (`ConsolidationJob`) it runs on the background executor the extraction worker uses
(one thread, low priority: tap.runtime.priority), a scope at a time, so its writes never interleave with an
extraction batch's and the proxy's event loop and recall threads always come first. Access counts
are flushed first (`before`), and the ones a flush leaves in memory while requests are being relayed
(`noted`) are added to what the store says, so "not recalled for N days" is measured on fresh numbers.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from pathlib import Path
from typing import Any

import msgspec

from tap.config import ConsolidateConfig
from tap.extract.consolidation_plan import ArchivePick, MergeGroup, ScopePlan, merge, plan_scope
from tap.plural import plural
from tap.ports import MemoryStore
from tap.records import Memory
from tap.runtime.priority import wait_for_gap, write_parts, yield_after
from tap.runtime.repeatlog import RepeatLog
from tap.sqlite import Step, connect, migrate

log = logging.getLogger(__name__)
ALL = 10**9
QUIET_WAIT_MAX_S = 900.0  # how long a background cycle waits for gaps between requests, in all
QUIET_S = 5.0  # a gap: no request relayed for this long (planning a large scope takes seconds)
QUIET_POLL_S = 0.5
ARCHIVE_BATCH = 32  # memories per write when archiving inside `tap serve` (each holds the GIL)

_MIGRATIONS: tuple[Step, ...] = (
    (  # 1: steps begun, and when each scope was last consolidated
        "CREATE TABLE IF NOT EXISTS steps (id TEXT PRIMARY KEY, scope TEXT NOT NULL, action TEXT NOT NULL, "
        "payload BLOB NOT NULL, at REAL NOT NULL)",
        "CREATE TABLE IF NOT EXISTS runs (scope TEXT PRIMARY KEY, finished_at REAL NOT NULL)",
    ),
)
"""The journal's tables in consolidate.db (tap.sqlite.migrate: steps are appended, never edited)."""


class Report(msgspec.Struct, kw_only=True):
    """What a consolidation did (or, with `dry_run`, would do). `merged`: memories folded into
    others (the members of every group); `groups`: one per new memory; `resumed`: steps of an
    interrupted run finished first."""

    dry_run: bool
    scopes: int = 0
    merged: int = 0
    archived: int = 0
    resumed: int = 0
    groups: list[MergeGroup] = msgspec.field(default_factory=list)
    archived_memories: list[ArchivePick] = msgspec.field(default_factory=list)

    def add(self, plan: ScopePlan) -> None:
        """Count one scope's plan in."""
        self.scopes += 1
        self.groups += plan.groups
        self.archived_memories += plan.archive
        self.merged += sum(len(g.members) for g in plan.groups)
        self.archived += len(plan.archive)


class Journal:
    """Steps begun but not finished, and when each scope was last consolidated (SQLite)."""

    name = "consolidation journal"

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db = connect(path, synchronous="FULL")  # a step must be on disk before the store changes
        migrate(self._db, "consolidation", _MIGRATIONS)

    def begin(self, step_id: str, scope: str, action: str, payload: dict[str, Any]) -> None:
        """Record a step about to be applied."""
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO steps (id, scope, action, payload, at) VALUES (?,?,?,?,?)",
                (step_id, scope, action, msgspec.json.encode(payload), time.time()),
            )

    def done(self, step_id: str) -> None:
        """The step is applied: forget it."""
        with self._lock:
            self._db.execute("DELETE FROM steps WHERE id = ?", (step_id,))

    def pending(self, scope: str | None = None) -> list[tuple[str, str, str, dict[str, Any]]]:
        """Steps left by an interrupted run: (id, scope, action, payload), oldest first."""
        query = "SELECT id, scope, action, payload FROM steps" + (" WHERE scope = ?" if scope else "") + " ORDER BY at"
        with self._lock:
            rows = self._db.execute(query, (scope,) if scope else ()).fetchall()
        return [(i, s, a, msgspec.json.decode(p)) for i, s, a, p in rows]

    def last_run(self, scope: str) -> float:
        """When the scope was last consolidated (0 if never)."""
        with self._lock:
            row = self._db.execute("SELECT finished_at FROM runs WHERE scope = ?", (scope,)).fetchone()
        return float(row[0]) if row else 0.0

    def ran(self, scope: str, at: float) -> None:
        """Record a finished consolidation of the scope."""
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO runs (scope, finished_at) VALUES (?,?)", (scope, at))

    def forget_scope(self, scope: str) -> int:
        """Drop what the journal keeps of a scope (ids only; tap.memories.service.ScopeHolder)."""
        with self._lock:
            steps = self._db.execute("DELETE FROM steps WHERE scope = ?", (scope,)).rowcount
            runs = self._db.execute("DELETE FROM runs WHERE scope = ?", (scope,)).rowcount
        return int(steps + runs)

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()


class Consolidator:
    """Plans and applies consolidation, one scope at a time (thread-safe for one caller at a time)."""

    def __init__(
        self,
        store: MemoryStore,
        journal: Journal,
        config: ConsolidateConfig,
        *,
        before: Callable[[], object] = lambda: None,
        noted: Callable[[], Mapping[str, tuple[int, float]]] = dict,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.journal = journal
        self.config = config
        self._before = before
        self._noted = noted
        self._now = now

    def scopes(self) -> list[str]:
        """Every scope with active memories."""
        return list(self.store.stats().by_scope)

    def due(self) -> list[str]:
        """The scopes not consolidated for `interval_hours` (those never done first)."""
        cutoff = self._now() - self.config.interval_hours * 3600
        last = {scope: self.journal.last_run(scope) for scope in self.scopes()}
        return sorted((s for s, at in last.items() if at <= cutoff), key=lambda s: (last[s], s))

    def run(
        self, scope: str | None = None, *, dry_run: bool = False, on_scope: Callable[[int, int], object] | None = None
    ) -> Report:
        """Consolidate one scope, or every scope, now (after finishing an interrupted run);
        `on_scope(done, total)` is called once the scopes are known and after each one (progress)."""
        report = Report(dry_run=dry_run)
        if not dry_run:
            report.resumed = self.replay(scope)
        names = [scope] if scope is not None else self.scopes()
        for done, name in enumerate(names):
            if on_scope is not None:
                on_scope(done, len(names))
            report.add(self.consolidate_scope(name, dry_run=dry_run))
        if on_scope is not None:
            on_scope(len(names), len(names))
        return report

    def plan(self, scope: str, *, paced: bool = False) -> ScopePlan:
        """What consolidating the scope would do now. Inside `tap serve` (`paced`) each step (reading
        the memories, their vectors, planning) is followed by a pause while requests are relayed:
        on a large scope each takes seconds, mostly holding the GIL."""

        def step[T](work: Callable[[], T]) -> T:
            began = time.perf_counter()
            done = work()
            if paced:
                yield_after(began)
            return done

        self._before()
        active = step(lambda: self.store.list_memories(scope=scope, limit=ALL, archived=False))
        noted = self._noted()  # the access counts `before` left unwritten (tap.recall.engine.flush_access)
        for memory in active:
            if (count_and_last := noted.get(memory.id)) is not None:
                memory.access_count += count_and_last[0]
                memory.last_accessed = max(memory.last_accessed, count_and_last[1])
        vectors = step(lambda: self.store.get_vectors([m.id for m in active if m.kind != "episode"]))
        return step(lambda: plan_scope(scope, active, vectors, self.config, now=self._now()))

    def consolidate_scope(self, scope: str, *, dry_run: bool = False, paced: bool = False) -> ScopePlan:
        """Plan and (unless `dry_run`) apply one scope; returns the plan. `paced` (inside `tap
        serve`): a pause after each merge, and archiving writes ARCHIVE_BATCH memories at a time
        with a pause after each (tap.runtime.priority.yield_after)."""
        plan = self.plan(scope, paced=paced)
        if dry_run:
            return plan
        for group in plan.groups:
            began = time.perf_counter()
            self.journal.begin(group.into, scope, "merge", {"into": group.into, "members": group.members})
            self._merge(group.into, group.members, plan.merged.get(group.into))
            self.journal.done(group.into)
            if paced:
                yield_after(began)
        if plan.archive:
            step = f"archive:{scope}:{self._now()}"
            ids = [pick.id for pick in plan.archive]
            self.journal.begin(step, scope, "archive", {"ids": ids})
            self._archive(ids, paced=paced)
            self.journal.done(step)
        self.journal.ran(scope, self._now())
        if plan.groups or plan.archive:
            log.info(
                "consolidated scope %s: %d memories merged into %d, %d archived",
                scope,
                sum(len(g.members) for g in plan.groups),
                len(plan.groups),
                len(plan.archive),
            )
        return plan

    def replay(self, scope: str | None = None) -> int:
        """Finish the steps an interrupted run left in the journal; returns how many."""
        steps = self.journal.pending(scope)
        for step_id, _, action, payload in steps:
            if action == "merge":
                self._merge(str(payload["into"]), [str(i) for i in payload["members"]], None)
            elif action == "archive":
                self._archive([str(i) for i in payload["ids"]])
            self.journal.done(step_id)
        if steps:
            log.info("consolidation: finished %s of an interrupted run", plural(len(steps), "step"))
        return len(steps)

    def _merge(self, into: str, member_ids: list[str], planned: Memory | None) -> None:
        """Write the merged memory (unless it exists), then mark its members superseded by it."""
        found = {m.id: m for m in self.store.get([into, *member_ids])}
        members = [found[i] for i in member_ids if i in found]
        merged = found.get(into)
        if merged is None:
            live = [m for m in members if m.active]
            if len(live) < 2:
                return  # the members were edited, merged or forgotten meanwhile: nothing to do
            merged = planned if planned is not None and len(live) == len(member_ids) else merge(live, now=self._now())
            source = next(m for m in live if m.content == merged.content)
            vector = self.store.get_vectors([source.id]).get(source.id)
            if vector is None:
                return
            self.store.add([merged], [vector])
            members = live
        retired = [m for m in members if m.current and m.id != merged.id]
        now = self._now()
        for member in retired:
            member.superseded_by = merged.id
            member.updated_at = now
        self.store.update_metadata(retired)

    def _archive(self, ids: list[str], *, paced: bool = False) -> None:
        now = self._now()
        for part in write_parts(ids, ARCHIVE_BATCH, always=paced):
            began = time.perf_counter()
            memories = [m for m in self.store.get(part) if m.active]
            for memory in memories:
                memory.archived_at = memory.updated_at = now
            self.store.update_metadata(memories)
            yield_after(began)


class ConsolidationJob:
    """Consolidation inside `tap serve`: on the background executor, a scope at a time."""

    def __init__(self, consolidator: Consolidator, executor: Executor) -> None:
        self.consolidator = consolidator
        self.executor = executor
        self.last: dict[str, Any] = {}
        self.waiting_for_gap = False
        self._log = RepeatLog(log)

    async def _call(self, fn: Callable[[], Any]) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn)

    async def run(self, scope: str | None = None, *, dry_run: bool = False) -> Report:
        """Consolidate now (`POST /tap/consolidate`), one executor step per scope."""
        report = Report(dry_run=dry_run)
        if not dry_run:
            report.resumed = await self._call(lambda: self.consolidator.replay(scope))
        scopes = [scope] if scope is not None else await self._call(self.consolidator.scopes)
        for name in scopes:
            step = functools.partial(self.consolidator.consolidate_scope, name, dry_run=dry_run, paced=True)
            report.add(await self._call(step))
        return report

    async def keep_running(
        self, stop: asyncio.Event, *, first_delay_s: float = 60.0, every_s: float | None = None
    ) -> None:
        """After `first_delay_s`, finish an interrupted run and consolidate the scopes that are due;
        again every `every_s` (default: `interval_hours`) until `stop`."""
        every_s = self.consolidator.config.interval_hours * 3600 if every_s is None else every_s
        if await self._wait(stop, first_delay_s):
            return
        while not stop.is_set():
            try:
                # Patience is for the whole cycle: under constant load it goes on. Even finding the
                # scopes that are due reads every memory (1 s at 10,000), so it waits as well.
                give_up_at = time.monotonic() + QUIET_WAIT_MAX_S
                if await self._quiet_moment(stop, give_up_at):
                    return
                resumed = await self._call(self.consolidator.replay)
                done = 0
                for scope in await self._call(self.consolidator.due):
                    if stop.is_set() or await self._quiet_moment(stop, give_up_at):
                        break
                    await self._call(functools.partial(self.consolidator.consolidate_scope, scope, paced=True))
                    done += 1
                self.last = {"at": time.time(), "scopes": done, "resumed": resumed}
                self._log.recovered("cycle", "consolidation works again")
            except Exception as exc:  # a store outage, a bug: try again next time
                self._log.failed("cycle", "consolidation failed; trying again later", exc=exc)
            if await self._wait(stop, every_s):
                return

    async def _quiet_moment(self, stop: asyncio.Event, give_up_at: float) -> bool:
        """Wait until no request was relayed for QUIET_S, until `give_up_at` (time.monotonic(): the
        cycle's QUIET_WAIT_MAX_S; then the cycle goes on, paced); True when `stop` was set meanwhile.
        Reading a scope's memories and vectors and planning them holds the GIL for much of a second
        at 10,000 memories, and merges write to the store: at 64 streams a cycle beside the
        requests cost 2 points of requests with memories and made the added first-byte p99 1.7x
        (`./dev bench load --rounds 60`, with and without consolidation). A daily job can wait."""
        self.waiting_for_gap = True
        try:
            return await wait_for_gap(stop, quiet_s=QUIET_S, give_up_at=give_up_at, poll_s=QUIET_POLL_S)
        finally:
            self.waiting_for_gap = False

    @staticmethod
    async def _wait(stop: asyncio.Event, seconds: float) -> bool:
        """Wait up to `seconds`; True when `stop` was set meanwhile."""
        try:
            await asyncio.wait_for(stop.wait(), seconds)
        except TimeoutError:
            return False
        return True

    def status(self) -> dict[str, Any]:
        """The last background cycle, and whether one waits for a gap between requests now, for
        `/tap/status`."""
        return {**self.last, "waiting_for_gap": self.waiting_for_gap}
