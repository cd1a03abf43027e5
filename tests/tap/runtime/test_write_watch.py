"""tap.runtime.write_watch: a write that does not come back is reported once it is STUCK_S old, on
a thread of its own (as a store library's write would hang), and no longer once it returns."""

from __future__ import annotations

import threading

from tap.runtime.write_watch import STUCK_S, WriteWatch
from testkit.waits import wait_until


def test_a_write_that_does_not_return_is_reported() -> None:
    now = [100.0]
    watch = WriteWatch(lambda: now[0])
    release, inside = threading.Event(), threading.Event()

    def hanging_write() -> None:
        with watch.writing():
            inside.set()
            release.wait(30)

    writer = threading.Thread(target=hanging_write)
    writer.start()
    try:
        wait_until(inside.is_set, what="the write under way")
        assert watch.stuck() == ""
        now[0] += STUCK_S + 5
        assert "has not returned for 35 s" in watch.stuck()
    finally:
        release.set()
        writer.join(10)
    assert watch.stuck() == ""
