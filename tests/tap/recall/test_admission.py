"""The recall waiting room: batches, admission under the deadline, shedding the oldest first."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from typing import Any

import pytest

from tap.errors import RecallOverloaded
from tap.recall.admission import RecallBatcher, Waiting


class Gate:
    """The batch function: records each batch, holds it until released, answers each payload."""

    def __init__(self) -> None:
        self.batches: list[list[Any]] = []
        self.kinds: list[list[str]] = []
        self.entered = threading.Semaphore(0)
        self.release = threading.Event()

    def __call__(self, batch: Sequence[Waiting]) -> None:
        self.batches.append([item.payload for item in batch])
        self.kinds.append(["lexical" if item.lexical_only else "full" for item in batch])
        self.entered.release()
        assert self.release.wait(10)
        for item in batch:
            item.future.set_result(f"done {item.payload}")


@pytest.fixture
def gate() -> Iterator[Gate]:
    found = Gate()
    yield found
    found.release.set()


def _batcher(gate: Gate, **kwargs: Any) -> RecallBatcher:
    return RecallBatcher(gate, workers=1, **kwargs)


def test_waiting_recalls_run_as_one_batch(gate: Gate) -> None:
    batcher = _batcher(gate)
    first = batcher.submit("a", deadline_s=10)
    assert gate.entered.acquire(timeout=10)  # the worker holds "a"; the next ones wait together
    rest = [batcher.submit(name, deadline_s=10) for name in ("b", "c", "d")]
    gate.release.set()
    assert [f.result(10) for f in (first, *rest)] == ["done a", "done b", "done c", "done d"]
    assert gate.batches == [["a"], ["b", "c", "d"]]
    assert batcher.status()["batches"] == 2
    batcher.close()


def test_over_capacity_the_oldest_waiting_recall_is_shed(gate: Gate) -> None:
    batcher = _batcher(gate, lexical_fallback=False)
    batcher.cost_ms[False] = 5000.0  # taken as a quarter of the deadline: 4 fit in it
    busy = batcher.submit("busy", deadline_s=10)
    assert gate.entered.acquire(timeout=10)
    waiting = [batcher.submit(f"w{n}", deadline_s=10) for n in range(5)]
    with pytest.raises(RecallOverloaded):
        waiting[0].result(1)  # shed at once, not after its deadline
    assert not any(f.done() for f in waiting[1:])
    gate.release.set()
    assert busy.result(10) == "done busy"
    assert [f.result(10) for f in waiting[1:]] == [f"done w{n}" for n in range(1, 5)]
    assert batcher.status()["shed"] == 1
    batcher.close()


def test_over_capacity_the_oldest_become_lexical_only_before_any_is_shed(gate: Gate) -> None:
    batcher = _batcher(gate)
    batcher.cost_ms[False], batcher.cost_ms[True] = 5000.0, 1000.0  # 2.5 s (a quarter) and 1 s
    busy = batcher.submit("busy", deadline_s=10)
    assert gate.entered.acquire(timeout=10)
    waiting = [batcher.submit(f"w{n}", deadline_s=10) for n in range(5)]
    gate.release.set()
    assert busy.result(10) == "done busy"
    assert [f.result(10) for f in waiting] == [f"done w{n}" for n in range(5)]
    assert gate.batches[1:] == [["w0", "w1"], ["w2", "w3", "w4"]]  # one kind per batch, oldest first
    assert gate.kinds[1:] == [["lexical", "lexical"], ["full"] * 3]
    assert batcher.status()["shed"] == 0 and batcher.status()["lexical_only"] == 2
    batcher.close()


def test_past_the_wait_goal_the_oldest_become_lexical_only_long_before_the_deadline(gate: Gate) -> None:
    """Full recalls queue for at most the wait goal: what waits beyond it (the oldest first) is
    answered by BM25 alone, with memories, instead of waiting out most of the deadline."""
    batcher = _batcher(gate, wait_goal_s=0.025)
    batcher.cost_ms[False], batcher.cost_ms[True] = 10.0, 3.0
    busy = batcher.submit("busy", deadline_s=0.15)
    assert gate.entered.acquire(timeout=10)
    waiting = [batcher.submit(f"w{n}", deadline_s=10) for n in range(4)]  # 40 ms of full recalls
    gate.release.set()
    assert busy.result(10) == "done busy"
    assert [f.result(10) for f in waiting] == [f"done w{n}" for n in range(4)]
    assert gate.kinds[1:] == [["lexical"] * 3, ["full"]]  # 3 + 3 + 3 + 10 ms ≤ 25 ms < 3 + 3 + 10 + 10
    assert batcher.status()["shed"] == 0
    batcher.close()
    held = Gate()
    without_goal = _batcher(held)
    without_goal.cost_ms[False] = 10.0
    busy = without_goal.submit("busy", deadline_s=0.15)
    assert held.entered.acquire(timeout=10)
    waiting = [without_goal.submit(f"x{n}", deadline_s=10) for n in range(4)]
    held.release.set()
    assert [f.result(10) for f in (busy, *waiting)] == ["done busy", *(f"done x{n}" for n in range(4))]
    assert held.kinds[1:] == [["full"] * 4]  # 40 ms fit the deadline: without a goal, all full
    without_goal.close()


def test_a_full_recall_slower_than_the_wait_goal_still_runs_when_it_is_the_only_one(gate: Gate) -> None:
    """The time per full recall is measured on full recalls: were each made BM25-only because one
    slow recall put the estimate above the goal, it would never be measured again."""
    batcher = _batcher(gate, wait_goal_s=0.025)
    batcher.cost_ms[False], batcher.cost_ms[True] = 40.0, 3.0
    gate.release.set()
    assert batcher.submit("alone", deadline_s=10).result(10) == "done alone"
    assert gate.kinds == [["full"]]
    busy = batcher.submit("busy", deadline_s=10)
    assert busy.result(10) == "done busy"
    assert gate.kinds[-1] == ["full"]
    batcher.close()


def test_a_recall_whose_deadline_cannot_be_met_is_never_started(gate: Gate) -> None:
    now = [100.0]
    batcher = RecallBatcher(gate, workers=1, now=lambda: now[0])
    busy = batcher.submit("busy", deadline_s=10)
    assert gate.entered.acquire(timeout=10)
    late = batcher.submit("late", deadline_s=0.2)
    short = batcher.submit("short", deadline_s=0.2)
    fine = batcher.submit("fine", deadline_s=10)
    now[0] += 0.198  # 2 ms left: less than any recall takes
    gate.release.set()
    assert busy.result(10) == "done busy"
    for future in (late, short):
        with pytest.raises(RecallOverloaded):
            future.result(10)
    assert fine.result(10) == "done fine"
    assert all("late" not in batch and "short" not in batch for batch in gate.batches)
    batcher.close()


def test_a_recall_with_time_for_bm25_alone_is_made_lexical_only(gate: Gate) -> None:
    now = [100.0]
    batcher = RecallBatcher(gate, workers=1, now=lambda: now[0])
    busy = batcher.submit("busy", deadline_s=10)
    assert gate.entered.acquire(timeout=10)
    tight = batcher.submit("tight", deadline_s=0.2)
    now[0] += 0.192  # 8 ms left: not enough for a full recall (10 ms), enough for BM25 alone (3 ms)
    gate.release.set()
    assert busy.result(10) == "done busy" and tight.result(10) == "done tight"
    assert gate.kinds[1] == ["lexical"]
    batcher.close()


def test_a_recall_whose_caller_gave_up_is_never_started(gate: Gate) -> None:
    batcher = _batcher(gate)
    busy = batcher.submit("busy", deadline_s=10)
    assert gate.entered.acquire(timeout=10)
    gone = batcher.submit("gone", deadline_s=10)
    assert gone.cancel()
    kept = batcher.submit("kept", deadline_s=10)
    gate.release.set()
    assert kept.result(10) == "done kept" and busy.result(10) == "done busy"
    assert all("gone" not in batch for batch in gate.batches)
    batcher.close()


def test_a_slow_spell_never_makes_the_room_shed_everything(gate: Gate) -> None:
    batcher = _batcher(gate)
    batcher.cost_ms[False] = batcher.cost_ms[True] = 5000.0  # very slow batches measured
    gate.release.set()
    futures = [batcher.submit(f"r{n}", deadline_s=0.15) for n in range(4)]
    assert [f.result(10) for f in futures] == [f"done r{n}" for n in range(4)]
    batcher.close()


def test_earliest_deadline_first(gate: Gate) -> None:
    batcher = RecallBatcher(gate, workers=1, max_batch=1)
    busy = batcher.submit("busy", deadline_s=10)
    assert gate.entered.acquire(timeout=10)
    later = batcher.submit("later", deadline_s=9)
    sooner = batcher.submit("sooner", deadline_s=5)
    gate.release.set()
    for future in (busy, later, sooner):
        future.result(10)
    assert gate.batches == [["busy"], ["sooner"], ["later"]]
    batcher.close()


def test_close_sheds_what_is_waiting(gate: Gate) -> None:
    batcher = _batcher(gate)
    batcher.submit("busy", deadline_s=10)
    assert gate.entered.acquire(timeout=10)
    waiting: Future[Any] = batcher.submit("waiting", deadline_s=10)
    batcher.close()
    with pytest.raises(RecallOverloaded):
        waiting.result(1)
    with pytest.raises(RecallOverloaded):
        batcher.submit("after", deadline_s=10)


class Clocked:
    """The batch function on a fake clock: each recall ends after its deadline while `late`."""

    def __init__(self) -> None:
        self.now = 100.0
        self.late = True
        self.fail: Exception | None = None
        self.kinds: list[str] = []

    def __call__(self, batch: Sequence[Waiting]) -> None:
        for item in batch:
            self.kinds.append("lexical" if item.lexical_only else "full")
            if self.late:
                self.now = item.deadline + 0.001
            if self.fail is not None:
                item.future.set_exception(self.fail)
            else:
                item.future.set_result("ok")


def _one_by_one(batcher: RecallBatcher, count: int) -> None:
    """Recalls one after another; a late one moves the fake clock by 2 ms only (the share's
    half-life is seconds)."""
    for n in range(count):
        try:
            batcher.submit(n, deadline_s=0.001).result(10)
        except RecallOverloaded:
            pass


def test_recalls_that_miss_their_deadline_make_the_next_ones_bm25_only_until_recalls_are_in_time_again() -> None:
    clocked = Clocked()
    batcher = RecallBatcher(clocked, workers=1, now=lambda: clocked.now)
    _one_by_one(batcher, 10)  # every one done after its deadline
    status = batcher.status()
    assert status["missed"] == 10 and status["lexical_share"] == pytest.approx(0.5, abs=0.01)
    assert clocked.kinds[:2] == ["full", "full"]
    _one_by_one(batcher, 30)
    assert batcher.status()["lexical_share"] == pytest.approx(1.0, abs=0.01)
    assert clocked.kinds[-10:] == ["lexical"] * 10  # saturated: BM25 alone for every new recall
    clocked.late = False
    _one_by_one(batcher, 9 * 20 + 20)  # a ninth of a miss's step per recall in time
    assert batcher.status()["lexical_share"] == 0.0
    assert clocked.kinds[-20:] == ["full"] * 20
    batcher.close()


def test_after_a_burst_a_quiet_server_is_back_to_full_recalls_within_a_minute() -> None:
    clocked = Clocked()
    batcher = RecallBatcher(clocked, workers=1, now=lambda: clocked.now)
    _one_by_one(batcher, 40)
    assert batcher.status()["lexical_share"] == pytest.approx(1.0, abs=0.01)
    clocked.late = False
    clocked.now += 60.0  # no recall for a minute: six half-lives
    assert batcher.status()["lexical_share"] < 0.02
    _one_by_one(batcher, 20)
    assert clocked.kinds[-20:] == ["full"] * 20
    batcher.close()


@pytest.mark.parametrize(
    ("error", "misses"),
    [(RuntimeError("store down"), 0), (TimeoutError("recall deadline passed before it started"), 5)],
    ids=["a failing store is not overload", "a deadline passed before the start is a miss"],
)
def test_only_a_recall_out_of_time_counts_as_a_miss(error: Exception, misses: int) -> None:
    clocked = Clocked()
    clocked.late, clocked.fail = False, error
    batcher = RecallBatcher(clocked, workers=1, now=lambda: clocked.now)
    for n in range(5):
        with pytest.raises(type(error)):
            batcher.submit(n, deadline_s=0.15).result(10)
    assert batcher.status()["missed"] == misses
    assert (batcher.status()["lexical_share"] > 0) == (misses > 0)
    batcher.close()


def test_without_the_lexical_fallback_misses_never_make_a_recall_bm25_only() -> None:
    clocked = Clocked()
    batcher = RecallBatcher(clocked, workers=1, lexical_fallback=False, now=lambda: clocked.now)
    _one_by_one(batcher, 40)
    assert batcher.status()["missed"] == 40
    assert set(clocked.kinds) == {"full"}
    batcher.close()
