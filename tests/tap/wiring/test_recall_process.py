"""Recall in a process of its own (tap.wiring.recall_process): a real spawned child on a real
embedded store and the real embedder, answering as `tap serve` would, kept current by its writes."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from store.chroma import ChromaStore
from tap.config import parse_config
from tap.recall.engine import Ask, RecallEngine
from tap.recall.query import reduce_query
from tap.recall.why import RecallTrace
from tap.records import RecallResult, make_memory
from tap.wiring import recall_process
from tap.wiring.recall_process import ChildSettings, RecallProcess
from testkit.waits import wait_until

pytestmark = pytest.mark.slow

NOW = time.time()
FACTS = [
    "Ann moved to Lisbon in May 2023",
    "Ann's favourite band is Radiohead",
    "Ann works as a nurse at the city hospital",
    "Ann's dog is a beagle called Pepper",
    "Ann is training for the Porto half marathon in October",
    "Ann is allergic to penicillin",
]
QUESTIONS = ["Where does Ann live?", "What is Ann's dog called?", "Any allergies I should know about?", "marathon"]


@contextlib.contextmanager
def recalling(
    home: Path, embedder: Any, *, exact_scope_max: int = 16384, searchable: Callable[[str], bool] | None = None
) -> Iterator[tuple[RecallEngine, RecallProcess]]:
    """A real embedded store holding FACTS, its engine, and a recall process started for it (ready)."""
    store = ChromaStore(
        data_dir=home,
        url="",
        collection="recall",
        embedder_id=embedder.model_id,
        dimensions=embedder.dimensions,
        exact_scope_max=exact_scope_max,
    )
    engine = RecallEngine(store, embedder, parse_config("").recall)
    put(engine, *FACTS)
    view = store.read_view()
    assert view is not None
    path, exact_max, max_vectors = view
    settings = ChildSettings(path, parse_config("").embedder, engine.config, exact_max, max_vectors)
    process = RecallProcess(settings, store.get, searchable or (lambda scope: True))
    store.on_index_commit(process.follow)
    engine.remote = process
    process.start()
    try:
        wait_until(lambda: process.status()["ready"], within=120, what="the recall process ready")
        yield engine, process
    finally:
        process.close()
        engine.close()
        store.close()


@pytest.fixture
def served(isolated_home: Path, embedder: Any) -> Iterator[tuple[RecallEngine, RecallProcess]]:
    with recalling(isolated_home, embedder) as both:
        yield both


def put(engine: RecallEngine, *texts: str, **fields: Any) -> list[str]:
    memories = [make_memory(scope="ann", content=text, valid_from=NOW - 86400, now=NOW, **fields) for text in texts]
    engine.store.add(memories, engine.embedder.embed_documents(list(texts)))
    return [m.id for m in memories]


def ask(question: str, skip: Any = None) -> Ask:
    return Ask(reduce_query(question), "ann", skip, 500, time.perf_counter())


def there(
    process: RecallProcess, question: str, skip: Any = None, *, lexical_only: bool = False
) -> RecallResult | None:
    answered = process.answer(ask(question, skip), lexical_only=lexical_only, deadline=time.monotonic() + 30)
    return None if answered is None else answered[0]


def same(a: RecallResult, b: RecallResult) -> bool:
    return a.block == b.block and [r.memory.id for r in a.memories] == [r.memory.id for r in b.memories]


def test_the_child_answers_as_this_process_would(served: tuple[RecallEngine, RecallProcess]) -> None:
    engine, process = served
    for question in QUESTIONS:
        remote = there(process, question)
        assert remote is not None, question
        assert remote.memories, question
        assert same(remote, engine.answer(ask(question))), question
    lexical = there(process, "Pepper the beagle", lexical_only=True)
    assert lexical is not None and lexical.lexical_only
    assert same(lexical, engine.answer(ask("Pepper the beagle"), lexical_only=True))


def test_a_write_or_a_forget_is_seen_by_the_next_recall(served: tuple[RecallEngine, RecallProcess]) -> None:
    engine, process = served
    before = there(process, "What instrument does Ann play?")
    assert before is not None and "cello" not in before.block
    [cello] = put(engine, "Ann plays the cello in an amateur orchestra")
    after = there(process, "What instrument does Ann play?")
    assert after is not None and "cello" in after.block
    engine.store.delete([cello])  # `tap memories forget`
    gone = there(process, "What instrument does Ann play?")
    assert gone is not None and "cello" not in gone.block
    [dog] = [m for m in engine.store.list_memories(scope="ann", limit=50) if "beagle" in m.content]
    engine.store.update_metadata([msgspec.structs.replace(dog, superseded_by="other")])  # superseded
    replaced = there(process, "What is Ann's dog called?")
    assert replaced is not None and "Pepper" not in replaced.block
    assert same(replaced, engine.answer(ask("What is Ann's dog called?")))


def test_a_skip_rule_that_cannot_travel_runs_here(served: tuple[RecallEngine, RecallProcess]) -> None:
    _, process = served
    assert there(process, "Where does Ann live?", skip=lambda memory: False) is None


def test_a_dead_child_is_started_again_and_recall_goes_on_meanwhile(
    served: tuple[RecallEngine, RecallProcess],
) -> None:
    engine, process = served
    pid = process.status()["pid"]
    assert pid
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not process.status()["ready"], within=30, what="the parent seeing the child gone")
    result = engine.recall("Where does Ann live?", scope="ann")  # here, meanwhile
    assert "Lisbon" in result.block
    [cello] = put(engine, "Ann plays the cello in an amateur orchestra")  # written while no child runs
    wait_until(lambda: process.status()["ready"], within=120, what="the recall process started again")
    assert process.status()["starts"] == 2 and process.status()["pid"] != pid
    again = there(process, "What instrument does Ann play?")
    assert again is not None and "cello" in again.block and cello in [r.memory.id for r in again.memories]


def test_a_traced_recall_is_answered_there_and_its_trace_reads_the_same(
    served: tuple[RecallEngine, RecallProcess],
) -> None:
    engine, process = served
    answered_before = process.status()["answered"]
    remote_trace, local_trace = RecallTrace(), RecallTrace()
    remote = asyncio.run(engine.recall_async("Where does Ann live?", scope="ann", trace=remote_trace))
    assert process.status()["answered"] == answered_before + 1  # not run here
    local = engine.recall("Where does Ann live?", scope="ann", trace=local_trace)
    assert same(remote, local)
    assert remote_trace.query == local_trace.query and remote_trace.vector == local_trace.vector
    assert remote_trace.candidates(50) == local_trace.candidates(50)
    assert any(c.outcome == "injected" for c in remote_trace.candidates(50))


def test_a_child_that_stops_answering_is_started_again(
    served: tuple[RecallEngine, RecallProcess], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, process = served
    monkeypatch.setattr(recall_process, "STUCK_S", 0.5)
    pid = process.status()["pid"]
    os.kill(pid, signal.SIGSTOP)  # alive, answering nothing
    try:
        with pytest.raises(TimeoutError):
            process.answer(ask("Where does Ann live?"), lexical_only=False, deadline=time.monotonic() + 0.4)
        # the watchdog runs on its own: no second recall is needed to notice the child is stuck
        wait_until(lambda: process.status()["pid"] not in (None, pid), within=120, what="a new recall process")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
    wait_until(lambda: process.status()["ready"], within=120, what="the new recall process ready")
    again = there(process, "Where does Ann live?")
    assert again is not None and "Lisbon" in again.block


@pytest.mark.parametrize("asked_anyway", [False, True])
def test_a_scope_searched_by_chroma_is_recalled_in_tap_serve(
    isolated_home: Path, embedder: Any, asked_anyway: bool
) -> None:
    """Above the in-memory bound the child cannot search a scope's vectors: tap serve does not ask
    it (or, asked anyway, the child says so) and recalls the scope itself."""
    searchable = None if asked_anyway else lambda scope: False  # what ChromaStore.searched_in_memory says
    with recalling(isolated_home, embedder, exact_scope_max=3, searchable=searchable) as (engine, process):
        assert engine.store.searched_in_memory("ann") is False  # type: ignore[attr-defined]
        assert there(process, "Where does Ann live?") is None
        result = asyncio.run(engine.recall_async("Where does Ann live?", scope="ann"))
        assert "Lisbon" in result.block
        assert process.status()["answered"] == 0 and process.status()["answered_here"] == 2
