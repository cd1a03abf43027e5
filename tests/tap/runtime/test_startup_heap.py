"""freeze_startup_objects: what start-up built leaves every later collection."""

from __future__ import annotations

import gc
import weakref

from tap.runtime.startup_heap import freeze_startup_objects


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def _cycle() -> weakref.ref[_Node]:
    """A reference cycle nothing else holds: only the collector can free it."""
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def test_the_objects_start_up_built_are_frozen_and_later_ones_are_not() -> None:
    built = _cycle()  # garbage start-up left: collected first, not frozen
    kept = [[n] for n in range(1000)]  # what start-up keeps, as tracked containers
    try:
        freeze_startup_objects()
        assert built() is None
        assert gc.get_freeze_count() >= len(kept)
        later = _cycle()
        gc.collect()
        assert later() is None  # what comes after is collected as usual
    finally:
        gc.unfreeze()
