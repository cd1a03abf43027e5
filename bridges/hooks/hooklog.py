"""One line per problem in tap's log file, `<data dir>/tap.log`, for processes with no one watching.

A hook must never disturb the agent (it exits 0 with no output when anything goes wrong), so what
went wrong is written here instead: one line, UTC timestamp first. `tap hooks status` shows the
last lines. The file is kept small: past MAX_BYTES it is moved to `tap.log.1` (one generation).
Standard library only; a failure to write the log is itself ignored (there is nowhere left to say it).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

LOG_FILE = "tap.log"
MAX_BYTES = 1 << 20


def log_path(data_dir: Path) -> Path:
    """Where the lines go."""
    return data_dir / LOG_FILE


def log_line(data_dir: Path, message: str) -> None:
    """Append `<UTC time> <message>` as one line (newlines in the message are flattened)."""
    path = log_path(data_dir)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    line = f"{stamp} {' '.join(message.split())}\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and path.stat().st_size > MAX_BYTES:
            os.replace(path, path.with_name(LOG_FILE + ".1"))
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(line)
    except OSError:
        pass


def last_lines(data_dir: Path, count: int = 5) -> list[str]:
    """The newest `count` lines of the log (empty when there is none)."""
    try:
        with open(log_path(data_dir), "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 64 * 1024))
            tail = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return []
    return [line for line in tail.splitlines() if line.strip()][-count:]
