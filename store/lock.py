"""An exclusive, advisory lock on the data dir so that only one process opens embedded Chroma.

Embedded Chroma (SQLite + HNSW files) is not safe for two writers. The lock file records the
holder's pid; the lock is released by the OS when the process dies, so a crash never leaves a
stale lock behind.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from tap.errors import StoreError


class DataDirInUse(StoreError):
    """Another live process holds the data dir (`pid`: the holder's, 0 when it did not say)."""

    def __init__(self, message: str, pid: int) -> None:
        super().__init__(message)
        self.pid = pid


class DataDirLock:
    """Holds `<data_dir>/tap.lock` with flock(LOCK_EX) until released."""

    def __init__(self, data_dir: Path) -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        self.path = data_dir / "tap.lock"
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock or raise DataDirInUse naming the process that holds it."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise DataDirInUse(
                f"the data dir {self.path.parent} is in use by another tap process (pid {holder}); "
                "commands go through the running `tap serve` automatically, otherwise stop that process",
                int(holder) if holder.isdigit() else 0,
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._fd = fd

    def release(self) -> None:
        """Let the lock go (idempotent)."""
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
