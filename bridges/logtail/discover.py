"""Which files a list of PATH arguments names: files, directories (recursive) and globs.

A file named directly is always taken, whatever its extension. In a directory (walked recursively,
skipping hidden sub-directories such as `.git`) only chat-log extensions are taken (LOG_SUFFIXES),
also with a rotation number after them (`chat.log.1`; compressed rotations are not read). A
glob (`~/logs/*.txt`, `**` allowed) is expanded on every call, so a follower sees new matches. A
root that does not exist, or a directory that cannot be listed, is reported as an error; the rest
is still returned.

`covered_by` answers the other way round: which recorded paths a list of roots answers for, so the
tailer forgets the files that are gone under its own roots and never touches another run's.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import partial
from pathlib import Path

__all__ = ["LOG_SUFFIXES", "Found", "covered_by", "find_files", "is_log_name"]

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


def covered_by(roots: Sequence[str]) -> Callable[[str], bool]:
    """Whether a recorded file path lies under one of the roots (as `find_files` reads them).

    A directory or file covers itself and every path below it; a glob covers the paths it matches
    and the paths below a matching directory. A root only counts while the folder it starts from
    exists — the root directory itself, the glob's fixed part, or a missing file root's folder (a
    file root that is gone covers only itself) — so a root on a disk that is not mounted covers
    nothing and its records are kept.
    """
    rules: list[Callable[[tuple[str, ...]], bool]] = []
    for root in roots:
        expanded = os.path.expanduser(root)
        parts = Path(expanded).absolute().parts
        if _MAGIC & set(expanded) and not os.path.exists(expanded):
            fixed = next((i for i, part in enumerate(parts) if _MAGIC & set(part)), len(parts))
            if os.path.isdir(Path(*parts[:fixed])):
                rules.append(partial(_glob_covers, parts))
        elif os.path.exists(expanded):
            rules.append(partial(_below, parts))
        elif os.path.isdir(Path(*parts[:-1])):
            rules.append(parts.__eq__)
    return lambda path: any(rule(Path(path).parts) for rule in rules)


def _below(root: Sequence[str], parts: Sequence[str]) -> bool:
    """`parts` is the root or lies below it."""
    return tuple(parts[: len(root)]) == tuple(root)


def _glob_covers(pattern: Sequence[str], parts: Sequence[str]) -> bool:
    """The pattern's parts match `parts` or a prefix of it (`**`: any folders; `*` skips hidden names)."""
    if not pattern:
        return True
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        spans = range(len(parts) + 1)
        return any(_glob_covers(rest, parts[i:]) for i in spans if not any(p.startswith(".") for p in parts[:i]))
    if not parts or (parts[0].startswith(".") and not head.startswith(".")):
        return False
    return fnmatchcase(parts[0], head) and _glob_covers(rest, parts[1:])


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
