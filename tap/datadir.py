"""tap's data dir is private to the user who runs it: the folder 0700, its files 0600.

Other local users can then read nothing tap keeps (memories, the turn log, the queue, the admin
token). `make_private` runs when the runtime opens (and before the admin token is written): it
sets the process umask to 077, so every file created from then on — SQLite's -wal and -shm files,
Chroma's segment files — is created private, and it tightens what is already there:
the data dir itself, the files directly in it, and the embedded Chroma folder (`chroma/`) with
everything under it. Other folders a user may keep in the data dir are left as they are. A file
another user owns (tap cannot change it) is skipped with a warning.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

log = logging.getLogger(__name__)
DIR_MODE = 0o700
FILE_MODE = 0o600
PRIVATE_SUBDIRS = ("chroma",)


def _tighten(path: Path, mode: int) -> None:
    try:
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode) or stat.S_IMODE(info.st_mode) & ~mode == 0:
            return
        path.chmod(stat.S_IMODE(info.st_mode) & mode)
    except OSError as exc:
        log.warning("cannot make %s private: %s", path, exc.strerror or exc)


def make_private(data_dir: Path) -> None:
    """Create the data dir 0700 and take group/other permissions off what tap keeps in it."""
    os.umask(0o077)
    data_dir.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    _tighten(data_dir, DIR_MODE)
    for entry in data_dir.iterdir():
        if entry.is_file() and not entry.is_symlink():
            _tighten(entry, FILE_MODE)
    for name in PRIVATE_SUBDIRS:
        root = data_dir / name
        if not root.is_dir() or root.is_symlink():
            continue
        _tighten(root, DIR_MODE)
        for folder, dirs, files in os.walk(root):
            for d in dirs:
                _tighten(Path(folder) / d, DIR_MODE)
            for f in files:
                _tighten(Path(folder) / f, FILE_MODE)
