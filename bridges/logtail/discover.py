"""Which files a list of PATH arguments names: files, directories (recursive) and globs.

A file named directly is always taken, whatever its extension. In a directory (walked recursively,
skipping hidden sub-directories such as `.git`) only chat-log extensions are taken (LOG_SUFFIXES),
also with a rotation number after them (`chat.log.1`; compressed rotations are not read). A
glob (`~/logs/*.txt`, `**` allowed) is expanded on every call, so a follower sees new matches. A
root that does not exist, or a directory that cannot be listed, is reported as an error; the rest
is still returned.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["LOG_SUFFIXES", "Found", "find_files", "is_log_name"]

LOG_SUFFIXES = frozenset({".jsonl", ".ndjson", ".txt", ".log"})
_MAGIC = frozenset("*?[")


@dataclass
class Found:
    """Files found (sorted, no duplicates) and the roots or directories that could not be read."""

    files: list[Path] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)


def find_files(roots: Sequence[str]) -> Found:
    """Expand the roots into files."""
    found = Found()
    seen: set[Path] = set()

    def add(path: Path) -> None:
        if path not in seen:
            seen.add(path)
            found.files.append(path)

    for root in roots:
        expanded = os.path.expanduser(root)
        if _MAGIC & set(expanded) and not os.path.exists(expanded):
            matches = sorted(glob.glob(expanded, recursive=True))
            if not matches:
                found.errors.append((root, "no file matches this pattern"))
            for match in matches:
                _collect(Path(match), add, found, explicit=os.path.isfile(match))
            continue
        _collect(Path(expanded), add, found, explicit=True)
    return found


def is_log_name(name: str) -> bool:
    """`*.jsonl`, `*.ndjson`, `*.txt`, `*.log`, or one of them plus a rotation number (`chat.log.1`)."""
    stem, suffix = os.path.splitext(name.lower())
    if suffix[1:].isdigit():
        suffix = os.path.splitext(stem)[1]
    return suffix in LOG_SUFFIXES


def _collect(path: Path, add: Callable[[Path], None], found: Found, *, explicit: bool) -> None:
    if path.is_dir():
        _walk(path, add, found)
    elif path.exists() or path.is_symlink():
        if explicit or is_log_name(path.name):
            add(path.absolute())
    else:
        found.errors.append((str(path), "no such file or directory"))


def _walk(root: Path, add: Callable[[Path], None], found: Found) -> None:
    def failed(exc: OSError) -> None:
        found.errors.append((str(exc.filename or root), exc.strerror or str(exc)))

    for folder, dirs, files in os.walk(root, onerror=failed):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if is_log_name(name):
                add(Path(folder, name).absolute())
