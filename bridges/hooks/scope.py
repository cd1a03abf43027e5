"""Whose memories a hook event reads and writes: per project by default (tap.intercept.projects: the git
root of the session's working directory, the same rule as the Claude Code log-tail's), or one
configured scope."""

from __future__ import annotations

from tap.intercept.projects import MAX_SCOPE, fit_scope, project_root, project_scope

__all__ = ["DEFAULT_SCOPE", "MAX_SCOPE", "hook_scope", "project_root"]

DEFAULT_SCOPE = "default"


def hook_scope(configured: str, cwd: str) -> str:
    """The scope of an event from `cwd`: the configured one if set, else the project's."""
    if configured.strip():
        return fit_scope(configured.strip())
    return project_scope(cwd) or DEFAULT_SCOPE
