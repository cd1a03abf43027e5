"""Give the C allocator's free memory back to the system (glibc only; a no-op elsewhere).

A tap process runs many threads, and glibc gives threads that allocate at the same time arenas of
their own, each keeping its own high-water mark of freed blocks. `release_free_memory` returns the
free memory of every arena (`malloc_trim(0)`, without the GIL), at most every RELEASE_EVERY_S: the
extraction worker calls it after each batch while no request is being relayed and, inside `tap
serve`, when it is idle and nothing was relayed for a while (a trim locks each arena in turn,
which a request's thread allocating there would wait for).

Large blocks (`LARGE_BLOCK`, 1 MB and up: a request body, a pasted turn, their copies) are given
their own mapping, returned to the system when freed (`map_large_blocks`, at `tap serve`'s start):
glibc's threshold for that grows to the size of each large block freed, after which big bodies
come from the arenas and their memory stays there, out of any trim's reach (docs/measurements.md).

Not done: capping the arenas (mallopt M_ARENA_MAX): it saved memory but cost CPU time per turn,
and the proxy's hot path would share the arenas' queue (docs/measurements.md).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform
import threading
import time

__all__ = ["LARGE_BLOCK", "RELEASE_EVERY_S", "map_large_blocks", "release_free_memory"]

RELEASE_EVERY_S = 5.0
LARGE_BLOCK = 1024 * 1024
_M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)

_lock = threading.Lock()
_released_at = 0.0


def _glibc() -> ctypes.CDLL | None:
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name or "libc.so.6")
    except OSError:
        return None


_LIBC = _glibc()


def release_free_memory(*, every_s: float = RELEASE_EVERY_S) -> bool:
    """Give the allocator's free memory back to the system, unless that was done less than
    `every_s` ago (0: now); True when it ran."""
    global _released_at
    if _LIBC is None:
        return False
    with _lock:
        now = time.monotonic()
        if every_s and now - _released_at < every_s:
            return False
        _released_at = now
    _LIBC.malloc_trim(0)
    return True


def map_large_blocks(size: int = LARGE_BLOCK) -> bool:
    """Serve every allocation of `size` bytes or more from a mapping of its own, returned to the
    system when freed (a fixed threshold: glibc's dynamic one stops doing so after large frees);
    True when set."""
    if _LIBC is None:
        return False
    return bool(_LIBC.mallopt(_M_MMAP_THRESHOLD, size))
