"""Whose memories a hook event reads and writes: per project by default, or one configured scope.

Per project = the git root of the session's working directory (the nearest ancestor, itself
included, that has a `.git` directory or file — a worktree or submodule has a file), else the
directory itself. Claude Code and Codex may be started from a subdirectory; the whole repository
is one project. Two exceptions keep unrelated folders apart: a `.git` found in the home
directory or at the filesystem root (a dotfiles repository) does not make everything under it one
project. No `git` process is started (a hook must be fast); symlinks are not resolved, so the scope
is the path as the agent reports it, like the log-tail's.

Scopes are at most MAX_SCOPE characters (the ingestion limit); a longer path keeps its start and a
hash of the whole.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

MAX_SCOPE = 256
DEFAULT_SCOPE = "default"


def project_root(cwd: Path) -> Path | None:
    """The nearest ancestor of `cwd` (itself included) holding `.git`, except home and `/`."""
    home = Path.home()
    for folder in (cwd, *cwd.parents):
        if (folder / ".git").exists():
            if folder != cwd and (folder == home or folder == Path(folder.anchor)):
                return None
            return folder
    return None


def fit(scope: str) -> str:
    """At most MAX_SCOPE characters; a longer scope keeps its start and a hash of the whole."""
    if len(scope) <= MAX_SCOPE:
        return scope
    return scope[: MAX_SCOPE - 13] + "…" + hashlib.sha256(scope.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def hook_scope(configured: str, cwd: str) -> str:
    """The scope of an event from `cwd`: the configured one if set, else the project's."""
    if configured.strip():
        return fit(configured.strip())
    if not cwd.strip():
        return DEFAULT_SCOPE
    folder = Path(cwd).expanduser()
    return fit(str(project_root(folder) or folder))
