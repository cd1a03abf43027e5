"""Admission for recalls under a deadline: the waiting room in front of RecallEngine.

Every proxied request asks for a recall with a hard deadline. `workers` threads (a core each, one
core left to the event loop) take waiting recalls earliest deadline first and answer each caller
as soon as its recall is done. Rules, so that under overload the newest requests (the ones with
time left) still get memories:
- the work waiting (the measured time per recall, over the workers) must fit in the deadline; past
  that the *oldest* waiting recalls become lexical-only (BM25 alone: no query embedding, no vector
  search; `lexical_fallback`), and if that is not enough the oldest are shed at once (their
  requests go out without memories straight away); a recall that can no longer finish in time is
  never started, nor one whose caller gave up;
- a wait goal (`wait_goal_s`): full recalls queue for at most that long, then the oldest become
  lexical-only;
- a share of new recalls (`lexical_share`) starts lexical-only: each miss raises it by `SHARE_UP`,
  each recall on time lowers it by `SHARE_DOWN` (it settles where about one recall in ten misses),
  and it halves every `SHARE_HALF_LIFE_S`, so a quiet server is back to full recalls within a minute.

Batches hold one kind of recall (full or lexical-only). The time per recall of each kind is an
exponential average of what its batches took, taken as at most a quarter of the deadline, so the
room always admits a few recalls per worker. Why each rule exists, with the load figures that
chose it: docs/measurements.md. Thread-safe; the futures are `concurrent.futures.Future`s.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from tap.errors import RecallOverloaded

log = logging.getLogger(__name__)

_INITIAL_MS = {False: 10.0, True: 3.0}  # full, lexical-only
_SMOOTHING = 0.2
_FLOOR_PER_WORKER = 2  # never shed while this few wait per worker
SHARE_UP = 0.05
SHARE_DOWN = SHARE_UP / 9  # settles where 1 recall in 10 misses its deadline
SHARE_HALF_LIFE_S = 10.0


@dataclass
class Waiting:
    """One recall in the waiting room."""

    payload: Any
    deadline: float
    """time.monotonic() by which its caller stops waiting."""
    deadline_s: float
    """The time it was given."""
    lexical_only: bool = False
    """Admission made it a BM25-only recall (no embedding, no vector search)."""
    future: Future[Any] = field(default_factory=Future)


class RecallBatcher:
    """The waiting room and its worker threads (see the module docstring)."""

    def __init__(
        self,
        run: Callable[[Sequence[Waiting]], None],
        *,
        workers: int = 2,
        max_batch: int = 8,
        lexical_fallback: bool = True,
        wait_goal_s: float | None = None,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self._run = run
        self.max_batch = max_batch
        self.lexical_fallback = lexical_fallback
        self.wait_goal_s = wait_goal_s
        self._now = now
        self._waiting: list[Waiting] = []
        self._cond = threading.Condition()
        self._closed = False
        self.cost_ms = dict(_INITIAL_MS)
        self.shed = 0
        self.lexical_only = 0
        self._share = 0.0
        self._share_at = now()
        self._share_credit = 0.0
        self.missed = 0
        self.batches = 0
        self.served = 0
        # Started on the first submit (a CLI command that recalls synchronously never needs them).
        # Daemon threads: they hold no durable work (a recall lost at exit is a request already
        # answered or gone), and close() stops them.
        self._threads = [
            threading.Thread(target=self._work, name=f"tap-recall-{n}", daemon=True) for n in range(max(1, workers))
        ]
        self._started = False

    @property
    def workers(self) -> int:
        """How many batches run at once."""
        return len(self._threads)

    def submit(self, payload: Any, *, deadline_s: float) -> Future[Any]:
        """Queue a recall that must be done within `deadline_s`; its future gets the result, or
        RecallOverloaded when it is shed."""
        item = Waiting(payload, self._now() + deadline_s, deadline_s)
        with self._cond:
            if self._closed:
                raise RecallOverloaded("recall is closed")
            if not self._started:
                self._started = True
                for thread in self._threads:
                    thread.start()
            if self.lexical_fallback:
                self._share_credit += self._current_share()
                if self._share_credit >= 1.0:
                    self._share_credit -= 1.0
                    self._downgrade(item)
            self._waiting.append(item)
            self._admit(deadline_s)
            self._cond.notify()
        item.future.add_done_callback(lambda future: self._outcome(item, future))
        return item.future

    def _outcome(self, item: Waiting, future: Future[Any]) -> None:
        """Learn from how a recall ended (see the module docstring): a miss raises the share of
        BM25-only recalls, a recall in time lowers it."""
        if future.cancelled():
            missed = True
        elif (error := future.exception()) is not None:
            if not isinstance(error, TimeoutError):  # shed (RecallOverloaded), or its deadline passed
                return  # a failing store says nothing about the load
            missed = True
        else:
            missed = self._now() > item.deadline
        with self._cond:
            share = self._current_share()
            if missed:
                self.missed += 1
                self._share = min(1.0, share + SHARE_UP)
            else:
                self._share = max(0.0, share - SHARE_DOWN)

    def _current_share(self) -> float:
        """The share of new recalls to start as BM25-only, decayed to now (lock held)."""
        now = self._now()
        if now > self._share_at:
            self._share *= 0.5 ** ((now - self._share_at) / SHARE_HALF_LIFE_S)
            self._share_at = now
        return self._share

    def _cost(self, item: Waiting, *, lexical_only: bool | None = None) -> float:
        """Seconds the recall takes, as admission counts it (see the module docstring)."""
        kind = item.lexical_only if lexical_only is None else lexical_only
        return min(self.cost_ms[kind] / 1000, item.deadline_s / 4)

    def _backlog(self) -> float:
        return sum(self._cost(w) for w in self._waiting) / self.workers

    def _admit(self, budget_s: float) -> None:
        """Make the waiting work fit in `budget_s` (lock held): the oldest become lexical-only,
        then the oldest are shed (see the module docstring). With a wait goal, the oldest become
        lexical-only already once the work waiting exceeds the goal."""
        if self.lexical_fallback and self.wait_goal_s is not None and self._backlog() > self.wait_goal_s:
            full = sum(1 for w in self._waiting if not w.lexical_only)
            for item in sorted(self._waiting, key=lambda w: w.deadline):
                # the newest full recall of each worker stays: else a time per recall above the goal
                # (measured once, on a slow first recall) made every later one BM25-only, and with
                # no full recall run any more it was never measured again
                if self._backlog() <= self.wait_goal_s or full <= self.workers:
                    break
                if not item.lexical_only:
                    full -= 1
                self._downgrade(item)
        if self._backlog() <= budget_s or len(self._waiting) <= _FLOOR_PER_WORKER * self.workers:
            return
        oldest_first = sorted(self._waiting, key=lambda w: w.deadline)
        if self.lexical_fallback:
            for item in oldest_first:
                if self._backlog() <= budget_s:
                    return
                self._downgrade(item)
        for item in oldest_first:
            if self._backlog() <= budget_s or len(self._waiting) <= _FLOOR_PER_WORKER * self.workers:
                return
            self._shed(item, "over capacity")

    def _downgrade(self, item: Waiting) -> None:
        if not item.lexical_only:
            item.lexical_only = True
            self.lexical_only += 1

    def _shed(self, item: Waiting, why: str) -> None:
        """Drop a waiting recall (lock held): its caller goes on without memories at once."""
        self._waiting.remove(item)
        self.shed += 1
        if not item.future.done():
            item.future.set_exception(RecallOverloaded(f"recall shed: {why}"))

    def _take(self) -> list[Waiting] | None:
        """The next batch (None once closed): the earliest deadlines that can still be met, all of
        one kind (full or lexical-only)."""
        with self._cond:
            while True:
                if self._closed:
                    return None
                now = self._now()
                for item in list(self._waiting):
                    left = item.deadline - now
                    if item.future.cancelled() or item.future.done():
                        self._waiting.remove(item)
                    elif left < self._cost(item):
                        if self.lexical_fallback and left >= self._cost(item, lexical_only=True):
                            self._downgrade(item)
                        else:
                            self._shed(item, "cannot finish before its deadline")
                if self._waiting:
                    break
                self._cond.wait()
            self._waiting.sort(key=lambda w: w.deadline)
            kind = self._waiting[0].lexical_only
            batch: list[Waiting] = []
            for item in self._waiting:
                if item.lexical_only != kind:
                    continue
                if len(batch) == self.max_batch or (
                    batch and (len(batch) + 1) * self._cost(item) > batch[0].deadline - now
                ):
                    break  # a bigger batch would make the earliest of it miss its deadline
                batch.append(item)
            chosen = {id(item) for item in batch}
            self._waiting = [w for w in self._waiting if id(w) not in chosen]
            return batch

    def _work(self) -> None:
        while (batch := self._take()) is not None:
            self._serve(batch)
            del batch  # nothing of a served recall stays referenced while the next is awaited

    def _serve(self, batch: list[Waiting]) -> None:
        """Run one batch and learn its cost."""
        started = [w for w in batch if w.future.set_running_or_notify_cancel()]
        if not started:
            return
        began = self._now()
        try:
            self._run(started)
        except Exception as exc:  # the engine resolves each future; this is a bug guard
            log.exception("recall batch failed")
            for item in started:
                if not item.future.done():
                    item.future.set_exception(exc)
        elapsed_ms = (self._now() - began) * 1000
        kind = started[0].lexical_only
        with self._cond:
            self.cost_ms[kind] += _SMOOTHING * (elapsed_ms / len(started) - self.cost_ms[kind])
            self.batches += 1
            self.served += len(started)

    def status(self) -> dict[str, float | int]:
        """Counters for /tap/status."""
        with self._cond:
            return {
                "waiting": len(self._waiting),
                "served": self.served,
                "batches": self.batches,
                "shed": self.shed,
                "lexical_only": self.lexical_only,
                "lexical_share": round(self._current_share(), 3),
                "missed": self.missed,
                "ms_per_recall": round(self.cost_ms[False], 2),
                "ms_per_lexical_recall": round(self.cost_ms[True], 2),
            }

    def close(self) -> None:
        """Stop the workers; recalls still waiting are shed."""
        with self._cond:
            self._closed = True
            for item in list(self._waiting):
                self._shed(item, "shutting down")
            self._cond.notify_all()
