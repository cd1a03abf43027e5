"""The C allocator's free memory given back to the system (glibc only)."""

from __future__ import annotations

import platform
import threading

import pytest

from tap.runtime import allocator

pytestmark = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc's allocator only"
)


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def test_free_memory_held_by_a_threads_arena_is_given_back() -> None:
    held: list[bytes] = []

    def churn() -> None:  # 160 MB of 16 KB blocks in this thread's arena, all freed but the last
        blocks = [bytes(16_384) for _ in range(10_000)]
        held.append(blocks[-1])
        del blocks

    thread = threading.Thread(target=churn)
    thread.start()
    thread.join()
    before = rss_mb()
    assert allocator.release_free_memory(every_s=0)
    assert before - rss_mb() > 50  # the last block pins the arena's top: only a trim returns the rest


def test_release_runs_at_most_once_per_interval() -> None:
    assert allocator.release_free_memory(every_s=0)
    assert not allocator.release_free_memory(every_s=3600)
