"""Handing an event that answers nothing over to a detached child, so the agent does not wait for it.

Stop and SessionEnd only hand the transcript to tap (the agents read no answer from them), yet an
agent waits for every foreground hook process to end: `claude -p` waits for its Stop hook before
it exits. The installed `tap` script (tap.cli.launch) therefore reads such an event's JSON, forks,
and exits in the parent at once: the agent waits for Python's start and the read of stdin only.
The child lives on in a session of its own with its standard streams on /dev/null (so the agent
sees its pipes close) and handles the event as the foreground process would (bridges.hooks.command:
the same deadline, the same fail-open log line). PreCompact is not detached (compaction should
wait for it); nothing is on a platform without `fork`, or in-process (tests, `python -m tap`).

Standard library only, and only `os`: it runs before anything else is imported.
"""

from __future__ import annotations

import os

DETACHED_EVENTS = frozenset({"stop", "session-end", "Stop", "SessionEnd"})
"""The events handed over by a child, in both spellings an installed command may use."""


def can_detach(argv: list[str]) -> bool:
    """Whether `tap ARGV` is a hook call for a detached event (no help asked)."""
    if "-h" in argv or "--help" in argv or not hasattr(os, "fork"):
        return False
    rest = list(argv)
    while rest and rest[0].startswith("--config"):
        rest = rest[2:] if rest[0] == "--config" else rest[1:]
    return len(rest) >= 2 and rest[0] == "hook" and rest[1] in DETACHED_EVENTS


def detached() -> bool:
    """Fork: True in the child (in a session of its own, its standard streams on /dev/null), False
    in the parent, which is then to exit at once."""
    if os.fork():
        return False
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    return True
