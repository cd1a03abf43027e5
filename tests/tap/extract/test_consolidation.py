"""Consolidation on the real store and embedder: merges, archiving, the cap, crash safety, the job."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from click.testing import CliRunner

from tap.cli.main import main
from tap.config import LoadedConfig, parse_config
from tap.extract import consolidation
from tap.extract.consolidation import ConsolidationJob, Consolidator
from tap.ports import StoreStats
from tap.records import Memory
from tap.runtime import priority
from tap.runtime.priority import HotPath, lower_thread_priority, thread_nice
from tap.wiring.runtime import Runtime, configured_adapters, open_runtime
from testkit.fakes import real_embedder_in_memory
from testkit.waits import until

NOW = 1_780_000_000.0
DAY = 86400.0
SCOPE = "ann"


def open_rt(home: Path, toml: str = "", *, on_disk: bool = False) -> Runtime:
    """A runtime on the real embedder; its store in memory, or (`on_disk`, for the CLI to read) Chroma."""
    adapters = configured_adapters if on_disk else real_embedder_in_memory
    return open_runtime(LoadedConfig(config=parse_config(toml), path=None, data_dir=home), adapters=adapters)


@pytest.fixture
def rt(isolated_home: Path) -> Iterator[Runtime]:
    runtime = open_rt(isolated_home)
    yield runtime
    runtime.close()


def memory(key: str, content: str, sources: list[str], *, at: float = NOW, **fields: object) -> Memory:
    return Memory(
        id=f"m_{key}",
        scope=SCOPE,
        content=content,
        sources=sources,
        conversation=f"conv-{key}",
        created_at=at,
        updated_at=at,
        valid_from=at,
        **fields,  # type: ignore[arg-type]
    )


DUPLICATES = [
    memory("d1", "The user lives in Lisbon with their partner", ["t1"]),
    memory("d2", "The user lives in Lisbon", ["t2"], at=NOW + DAY),
    memory("d3", "The user lives in Lisbon with their partner!", ["t3", "t4"], at=NOW + 2 * DAY),
    memory("e1", "The user's favourite editor is helix", ["t5"]),
    memory("e2", "The user's favourite editor is helix, they say", ["t6"]),
]
DISTINCT = [
    memory("s1", "The user's sister lives in Lisbon", ["t7"]),  # another person
    memory("a7", "Ava is 7 years old", ["t8"]),  # another number
    memory("a8", "Ava is 8 years old", ["t9"]),
    memory("n1", "The user does not eat meat", ["t10"]),  # a negation
    memory("n2", "The user does eat meat", ["t11"]),
    memory("x1", "User: I live in Lisbon now.", ["t12"], kind="episode", importance=1),  # excerpts: same words only
    memory("x2", "User: I live in Lisbon now", ["t13"], kind="episode", importance=1),
    memory("x3", "User: I lived in Lisbon before.", ["t14"], kind="episode", importance=1),
]


def consolidation_job_consolidator(rt: Runtime, *, now: float) -> Consolidator:
    """Wired as `tap serve` wires it: a paced flush first, the counts it left in memory added."""
    return Consolidator(
        rt.store,
        rt.consolidator.journal,
        rt.loaded.config.consolidate,
        before=lambda: rt.recall.flush_access(paced=True),
        noted=rt.recall.pending_access,
        now=lambda: now,
    )


def consolidator(rt: Runtime, *, now: float, toml: str = "") -> Consolidator:
    config = parse_config(toml).consolidate if toml else rt.loaded.config.consolidate
    return Consolidator(rt.store, rt.consolidator.journal, config, before=rt.recall.flush_access, now=lambda: now)


def everything(rt: Runtime) -> dict[str, Memory]:
    return {m.id: m for m in rt.store.iter_memories(scope=SCOPE)}


def test_merges_seeded_duplicates_into_one_memory_citing_every_source(rt: Runtime) -> None:
    rt.memories.write([*DUPLICATES, *DISTINCT])
    preview = consolidator(rt, now=NOW + 3 * DAY).run(SCOPE, dry_run=True)
    assert everything(rt).keys() == {m.id for m in [*DUPLICATES, *DISTINCT]}  # a dry run changes nothing
    report = consolidator(rt, now=NOW + 3 * DAY).run(SCOPE)
    assert [sorted(g.members) for g in report.groups] == [sorted(g.members) for g in preview.groups]
    groups = {frozenset(g.members): g.into for g in report.groups}
    assert set(groups) == {
        frozenset({"m_d1", "m_d2", "m_d3"}),
        frozenset({"m_e1", "m_e2"}),
        frozenset({"m_x1", "m_x2"}),
    }
    assert report.merged == 7 and report.archived == 0
    stored = everything(rt)
    for members, into in groups.items():
        merged = stored[into]
        assert merged.active and set(merged.merged_from) == members
        cited = {s for i in members for s in stored[i].sources}
        assert set(merged.sources) == cited  # every source kept
        for old in members:  # kept as history, not deleted
            assert stored[old].superseded_by == into and not stored[old].active
    lisbon = stored[groups[frozenset({"m_d1", "m_d2", "m_d3"})]]
    assert lisbon.content.startswith("The user lives in Lisbon with their partner")
    assert lisbon.valid_from == NOW + 2 * DAY and lisbon.created_at == NOW
    assert all(stored[m.id].active for m in DISTINCT if m.id not in ("m_x1", "m_x2"))
    history = [m.id for m in rt.memories.chain("m_d2")]
    assert set(history) == {"m_d1", "m_d2", "m_d3", lisbon.id} and history[-1] == lisbon.id
    block = rt.memories.recall_json("Where does the user live?", scope=SCOPE)
    ids = [m["id"] for m in block["memories"]]
    assert lisbon.id in ids and not {"m_d1", "m_d2", "m_d3"} & set(ids)
    assert consolidator(rt, now=NOW + 4 * DAY).run(SCOPE).merged == 0  # nothing left to merge


def test_forgetting_a_merged_memory_forgets_every_version(rt: Runtime) -> None:
    rt.memories.write(DUPLICATES[:3])
    report = consolidator(rt, now=NOW + 3 * DAY).run(SCOPE)
    forgotten = rt.memories.forget(report.groups[0].into)
    assert set(forgotten) == {"m_d1", "m_d2", "m_d3", report.groups[0].into}
    assert everything(rt) == {}


def test_archived_memory_is_not_recalled_and_comes_back_with_restore(rt: Runtime) -> None:
    tea = memory("tea", "The user likes oolong tea from Taiwan", ["t1"], importance=2)
    bees = memory("bees", "The user keeps bees in Sintra", ["t2"], importance=4)  # important: never archived
    rt.memories.write([tea, bees])
    assert consolidator(rt, now=NOW + 30 * DAY).run(SCOPE).archived == 0  # not stale yet
    report = consolidator(rt, now=NOW + 91 * DAY).run(SCOPE)
    assert [(a.id, a.reason) for a in report.archived_memories] == [("m_tea", "stale")]
    stored = everything(rt)["m_tea"]
    assert stored.archived and stored.current and not stored.active
    for query in ("Which tea does the user like?", "oolong Taiwan"):  # neither vector nor lexical finds it
        assert "m_tea" not in [m["id"] for m in rt.memories.recall_json(query, scope=SCOPE)["memories"]]
    listed = {m.id: m for m in rt.memories.list_memories(scope=SCOPE)}
    assert listed["m_tea"].archived and "m_bees" in listed  # still listed
    assert [m.id for m in rt.memories.list_memories(scope=SCOPE, archived=True)] == ["m_tea"]
    assert "m_tea" not in [m.id for m in rt.memories.list_memories(scope=SCOPE, archived=False)]
    restored = rt.memories.restore("m_tea")
    assert restored.active and restored.archived_at == 0
    assert rt.memories.recall_json("Which tea does the user like?", scope=SCOPE)["memories"][0]["id"] == "m_tea"
    rt.memories.archive("m_bees")  # by hand, whatever its importance
    assert "m_bees" not in [m["id"] for m in rt.memories.recall_json("bees in Sintra", scope=SCOPE)["memories"]]


def test_recalled_memories_are_not_archived(rt: Runtime) -> None:
    rt.memories.write([memory("tea", "The user likes oolong tea from Taiwan", ["t1"], importance=1)])
    rt.recall._now = lambda: NOW + 80 * DAY  # recalled on day 80
    rt.recall.recall("Which tea does the user like?", scope=SCOPE)
    assert consolidator(rt, now=NOW + 120 * DAY).run(SCOPE).archived == 0  # flushed first: used 40 days ago
    assert consolidator(rt, now=NOW + 171 * DAY).run(SCOPE).archived == 1


def test_counts_a_busy_server_has_not_written_yet_keep_a_memory(rt: Runtime) -> None:
    """A recall noted while requests were being relayed is not in the store yet (tap.recall.engine
    flush_access waits for a quiet moment), and consolidation counts it all the same."""
    rt.memories.write([memory("tea", "The user likes oolong tea from Taiwan", ["t1"], importance=1)])
    rt.recall._now = lambda: NOW + 80 * DAY  # recalled on day 80
    rt.recall.recall("Which tea does the user like?", scope=SCOPE)
    busy = consolidation_job_consolidator(rt, now=NOW + 120 * DAY)
    with priority.HOT_PATH.serving():
        assert busy.run(SCOPE).archived == 0
        assert rt.store.get(["m_tea"])[0].access_count == 0  # still in memory only
    assert consolidator(rt, now=NOW + 171 * DAY).run(SCOPE).archived == 1


def test_a_cap_archives_the_least_valuable(rt: Runtime) -> None:
    keep = [
        memory(f"k{i}", f"The user plays the {name}", [f"k{i}"], importance=4)
        for i, name in enumerate(["cello", "oboe"])
    ]
    low = [
        memory(f"l{i}", f"Note {name} about the garden", [f"l{i}"], importance=1)
        for i, name in enumerate(["one", "two"])
    ]
    rt.memories.write([*keep, *low])
    report = consolidator(rt, now=NOW + DAY, toml="[consolidate]\nmax_per_scope = 3").run(SCOPE)
    assert [a.reason for a in report.archived_memories] == ["cap"]
    assert report.archived_memories[0].id in {"m_l0", "m_l1"}
    assert len(rt.memories.list_memories(scope=SCOPE, archived=False)) == 3


@pytest.mark.parametrize("paced", [False, True])
def test_archiving_in_paced_batches_archives_the_same(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch, paced: bool
) -> None:
    monkeypatch.setattr(consolidation, "ARCHIVE_BATCH", 3)  # 10 stale memories: four batches
    stale = [memory(f"s{i}", f"Note {i}: the {i}th garden chore", [f"s{i}"], importance=1) for i in range(10)]
    keep = memory("bees", "The user keeps bees in Sintra", ["b1"], importance=4)
    rt.memories.write([*stale, keep])
    plan = consolidator(rt, now=NOW + 120 * DAY).consolidate_scope(SCOPE, paced=paced)
    assert sorted(a.id for a in plan.archive) == sorted(m.id for m in stale)
    stored = everything(rt)
    assert all(stored[m.id].archived for m in stale) and stored["m_bees"].active


CRASHER = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    from tap.wiring.runtime import open_runtime
    from tap.config import LoadedConfig, parse_config
    from tap.extract.consolidation import Consolidator

    class CrashAfterMergedWrite:
        '''The real store; the process dies right after the first merged memory is written,
        before its members are marked (between the two writes of a merge).'''
        def __init__(self, store):
            self.store = store
        def __getattr__(self, name):
            return getattr(self.store, name)
        def add(self, memories, vectors):
            self.store.add(memories, vectors)
            if any(m.id.startswith("c_") for m in memories):
                os._exit(9)

    rt = open_runtime(LoadedConfig(config=parse_config(""), path=None, data_dir=Path(sys.argv[1])))
    Consolidator(CrashAfterMergedWrite(rt.store), rt.consolidator.journal, rt.loaded.config.consolidate).run("ann")
    """
)


@pytest.mark.slow
def test_a_crash_mid_consolidation_leaves_the_store_consistent_and_the_next_run_finishes(isolated_home: Path) -> None:
    rt = open_rt(isolated_home, on_disk=True)
    rt.memories.write([*DUPLICATES, *DISTINCT])
    rt.close()
    crashed = subprocess.run([sys.executable, "-c", CRASHER, str(isolated_home)], capture_output=True, timeout=120)
    assert crashed.returncode == 9, crashed.stderr.decode()
    rt = open_rt(isolated_home, on_disk=True)
    try:
        stored = everything(rt)
        assert len(stored) == len(DUPLICATES) + len(DISTINCT) + 1  # one merged memory written, nothing lost
        for m in stored.values():  # no link points nowhere
            assert all(i in stored for i in [m.superseded_by, m.supersedes, *m.merged_from] if i)
        cited = {s for m in stored.values() if m.active for s in m.sources}
        assert cited >= {s for m in [*DUPLICATES, *DISTINCT] for s in m.sources}  # every source still active
        assert rt.consolidator.journal.pending(SCOPE)  # the step it was in is in the journal
        report = rt.consolidator.run(SCOPE)
        assert report.resumed == 1 and not rt.consolidator.journal.pending()
        stored = everything(rt)
        merged = [m for m in stored.values() if m.merged_from]
        assert len(merged) == 3 and all(m.active for m in merged)
        for m in merged:
            assert all(stored[i].superseded_by == m.id for i in m.merged_from)
        hits = rt.store.search_text(["Lisbon partner"], scope=SCOPE, k=10)[0]  # the lexical index is in step
        assert {h.memory.id for h in hits} <= {m.id for m in stored.values() if m.active}
    finally:
        rt.close()


async def test_the_background_job_runs_at_low_priority_once_per_interval(rt: Runtime) -> None:
    rt.memories.write(DUPLICATES[:3])
    nice: list[int] = []
    runner = Consolidator(
        rt.store, rt.consolidator.journal, rt.loaded.config.consolidate, before=lambda: nice.append(thread_nice())
    )
    executor = ThreadPoolExecutor(1, "tap-background", initializer=lower_thread_priority)
    job = ConsolidationJob(runner, executor)
    stop = asyncio.Event()
    task = asyncio.create_task(job.keep_running(stop, first_delay_s=0, every_s=0.05))  # noqa: TID251 - a test's own task
    try:
        await until(lambda: bool(job.last), what="the first background cycle")
        cycles = job.last["at"]
        await until(lambda: job.last["at"] > cycles, what="another cycle")  # the scope was not due in it
    finally:
        stop.set()
        await task
        executor.shutdown()
    assert len([m for m in everything(rt).values() if m.merged_from]) == 1
    assert len(nice) == 1 and (sys.platform != "linux" or nice[0] >= 10)


@pytest.mark.parametrize("patience_s", [60.0, 0.05])
async def test_the_background_cycle_waits_for_a_gap_between_requests(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch, patience_s: float
) -> None:
    """While a request is being relayed the cycle waits (the GIL is the proxy's); once none was
    relayed for QUIET_S it runs, and under load that never ends it runs once its patience is spent."""
    rt.memories.write(DUPLICATES[:3])
    hot_path = HotPath()
    monkeypatch.setattr(priority, "HOT_PATH", hot_path)
    monkeypatch.setattr(consolidation, "QUIET_POLL_S", 0.01)
    monkeypatch.setattr(consolidation, "QUIET_S", 0.05)
    monkeypatch.setattr(consolidation, "QUIET_WAIT_MAX_S", patience_s)
    read: list[str] = []  # even listing the due scopes reads every memory (store.stats)
    counted_stats = rt.store.stats

    def stats() -> StoreStats:
        read.append("stats")
        return counted_stats()

    monkeypatch.setattr(rt.store, "stats", stats)
    runner = Consolidator(rt.store, rt.consolidator.journal, rt.loaded.config.consolidate)
    executor = ThreadPoolExecutor(1, "tap-background")
    job = ConsolidationJob(runner, executor)
    stop = asyncio.Event()
    hot_path.enter()
    task = asyncio.create_task(job.keep_running(stop, first_delay_s=0, every_s=60))  # noqa: TID251 - a test's own task
    try:
        if patience_s > 1:
            await asyncio.sleep(0.3)
            assert not job.last and not any(m.merged_from for m in everything(rt).values())
            assert read == []
            assert job.status() == {"waiting_for_gap": True}
            hot_path.leave()
        await until(lambda: bool(job.last), what="the background cycle")
    finally:
        stop.set()
        await task
        executor.shutdown()
    assert len([m for m in everything(rt).values() if m.merged_from]) == 1


def test_cli_consolidate_dry_run_then_for_real(isolated_home: Path) -> None:
    rt = open_rt(isolated_home, on_disk=True)
    rt.memories.write(DUPLICATES[:3])
    rt.close()
    runner = CliRunner()
    dry = runner.invoke(main, ["memories", "consolidate", "--scope", SCOPE, "--dry-run"], catch_exceptions=False)
    assert dry.exit_code == 0 and "would merge 3 memories into 1" in dry.stdout
    done = runner.invoke(main, ["memories", "consolidate", "--json"], catch_exceptions=False)
    report = json.loads(done.stdout)
    assert done.exit_code == 0 and report["merged"] == 3 and not report["dry_run"]
    shown = runner.invoke(main, ["memories", "show", report["groups"][0]["into"]], catch_exceptions=False)
    assert "merged from:" in shown.stdout and all(f"m_d{i}" in shown.stdout for i in (1, 2, 3))
    listed = runner.invoke(main, ["memories", "list", "--all-versions"], catch_exceptions=False)
    assert "current" in listed.stdout and "old → c_" in listed.stdout
