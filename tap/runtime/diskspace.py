"""Out of space in the data dir: recognised, refused before it can hang a write, reported.

Embedded Chroma holds the interpreter lock for the whole of a write, and a write that meets a full
disk does not return: every thread of `tap serve` (the event loop included) would stop for good.
So the embedded store asks `SpaceWatch.check` before each write and refuses with `OutOfSpace`
while fewer than `[data] min_free_mb` are free on the data dir's file system; SQLite's own "disk
is full" and the OS's ENOSPC (`out_of_space`) are the same condition for everything else. Each
refusal or failure is noted; `problem` says what health and the API report (free space only: the
path is not shown), and clears by itself once there is room again, so writes resume without a
restart.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import threading
import time
from pathlib import Path

from tap.errors import OutOfSpace

MB = 1024 * 1024
NOTED_FOR_S = 30.0
"""A failure met this recently keeps `problem` set even if a little room came back meanwhile."""
_FULL_WORDS = ("database or disk is full", "no space left on device", "disk quota exceeded")


def out_of_space(exc: BaseException) -> bool:
    """Whether an error (or one it was raised from) says the disk is full."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OutOfSpace):
            return True
        if isinstance(current, OSError) and current.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if isinstance(current, sqlite3.Error) and getattr(current, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:
            return True
        if any(words in str(current).lower() for words in _FULL_WORDS):
            return True
        current = current.__cause__ or current.__context__
    return False


def free_bytes(path: Path) -> int:
    """Bytes an unprivileged writer can still use on the file system holding `path`."""
    stats = os.statvfs(path)
    return stats.f_bavail * stats.f_frsize


class SpaceWatch:
    """The data dir's free space: checked before writes that must not meet a full disk."""

    def __init__(self, path: Path, min_free_mb: float) -> None:
        self.path = path
        self.min_free = int(min_free_mb * MB)
        self._lock = threading.Lock()
        self._noted_at = 0.0
        self._noted = ""
        self.refused = 0

    def check(self, what: str = "write", path: Path | None = None) -> None:
        """Raise OutOfSpace when less than the minimum is free on the data dir's file system (or
        on the one holding `path`, inside it); nothing is written then."""
        if self.min_free <= 0:
            return
        free = self._free(path)
        if free is not None and free < self.min_free:
            self.refused += 1
            message = self._message(free, what)
            self.note(message)
            raise OutOfSpace(message)

    def note(self, message: str) -> None:
        """Remember an out-of-space failure met anywhere in the data dir."""
        with self._lock:
            self._noted_at, self._noted = time.monotonic(), message

    def problem(self) -> str:
        """What to report while the data dir is (or just was) out of space; "" otherwise."""
        free = self._free()
        if free is not None and free < self.min_free:
            return self._message(free, "write")
        with self._lock:
            if (
                self._noted
                and time.monotonic() - self._noted_at < NOTED_FOR_S
                and (free is None or free < 2 * self.min_free)
            ):
                return self._noted
        return ""

    def free_mb(self) -> float | None:
        """Free space in MB (None when it cannot be read)."""
        free = self._free()
        return None if free is None else round(free / MB, 1)

    def _free(self, path: Path | None = None) -> int | None:
        try:
            return free_bytes(path or self.path)
        except OSError:
            return None

    def _message(self, free: int, what: str) -> str:
        return (
            f"out of space: {free / MB:.1f} MB free in the data dir, tap keeps at least "
            f"{self.min_free / MB:.0f} MB free ([data] min_free_mb); the {what} was refused, free some space"
        )
