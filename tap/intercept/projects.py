"""Which project a working directory belongs to, so every way in that knows a directory (agent
hooks, the Claude Code log-tail) files its memories under the same scope.

A project is the git root of the directory: the nearest ancestor, itself included, that has a
`.git` directory or file (a worktree or submodule has a file), else the directory itself. An agent
started from a subdirectory is still in the whole repository's project. A `.git` found in the home
directory or at the filesystem root (a dotfiles repository) does not make everything under it one
project. No `git` process is started and symlinks are not resolved: the scope is the path as the
agent reported it. Scopes are at most MAX_SCOPE characters (the ingestion limit); a longer one
keeps its start and a hash of the whole.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

MAX_SCOPE = 256


def project_root(cwd: Path) -> Path | None:
    """The nearest ancestor of `cwd` (itself included) holding `.git`, except home and `/`."""
    home = Path.home()
    for folder in (cwd, *cwd.parents):
        try:
            found = (folder / ".git").exists()
        except OSError:  # an unreadable folder on the way up: no project there
            found = False
        if found:
            if folder != cwd and (folder == home or folder == Path(folder.anchor)):
                return None
            return folder
    return None


def fit_scope(scope: str) -> str:
    """At most MAX_SCOPE characters; a longer scope keeps its start and a hash of the whole."""
    if len(scope) <= MAX_SCOPE:
        return scope
    return scope[: MAX_SCOPE - 13] + "…" + hashlib.sha256(scope.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def project_scope(cwd: str) -> str:
    """The scope of a working directory: its project's root, or the directory ("" when none)."""
    if not cwd.strip():
        return ""
    folder = Path(cwd).expanduser()
    return fit_scope(str(project_root(folder) or folder))
