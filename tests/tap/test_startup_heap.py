"""freeze_startup_objects: what start-up built leaves every later collection."""

from __future__ import annotations

import gc

from tap.wiring.startup_heap import freeze_startup_objects


def test_the_objects_start_up_built_are_frozen_and_later_ones_are_not() -> None:
    built = [[n] for n in range(1000)]  # tracked containers, as start-up builds them
    try:
        freeze_startup_objects()
        frozen = gc.get_freeze_count()
        assert frozen >= len(built)
        later = [[n] for n in range(1000)]
        assert gc.get_freeze_count() == frozen  # what comes after is collected as usual
        assert gc.is_tracked(later[0])
    finally:
        gc.unfreeze()
