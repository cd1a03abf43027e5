"""Handing an event that answers nothing over to a process of its own, so the agent does not wait for it.

Stop and SessionEnd only hand the transcript to tap (the agents read no answer from them), yet an
agent waits for every foreground hook process to end: `claude -p` waits for its Stop hook before
it exits. The installed `tap` script (tap.cli.launch) therefore reads such an event's JSON, starts
`tap` again for it in a session of its own (`posix_spawn`: the parent waits only until the new
program runs) with the JSON on a pipe and its output on /dev/null, and exits: the agent waits for
Python's start and the read of stdin only. The new process handles the event as the foreground one
would (bridges.hooks.command: the same deadline, the same fail-open log line); `TAP_HOOK_HANDOVER`
in its environment stops it from handing over again. A forked child would do as well on an idle
machine, but until the scheduler ran it, it held the agent's pipes open (on a loaded one the agent
waited as long as for the whole hook). PreCompact is not handed over (compaction should wait for it);
nothing is on a platform without `posix_spawn`, or in-process (tests, `python -m tap`).

Standard library only, and only `os`: it runs before anything else is imported.
"""

from __future__ import annotations

import os

HANDOVER_ENV = "TAP_HOOK_HANDOVER"
DETACHED_EVENTS = frozenset({"stop", "session-end", "Stop", "SessionEnd"})
"""The events handed over, in both spellings an installed command may use."""


def can_detach(argv: list[str]) -> bool:
    """Whether `tap ARGV` is a hook call for a handed-over event (no help asked, not handed over yet)."""
    if "-h" in argv or "--help" in argv or not hasattr(os, "posix_spawn") or os.environ.get(HANDOVER_ENV):
        return False
    rest = list(argv)
    while rest and rest[0].startswith("--config"):
        rest = rest[2:] if rest[0] == "--config" else rest[1:]
    return len(rest) >= 2 and rest[0] == "hook" and rest[1] in DETACHED_EVENTS


def hand_over(program: list[str], body: bytes) -> None:
    """Start `program` in a session of its own with `body` on its stdin and its output on /dev/null."""
    read_end, write_end = os.pipe()
    try:
        os.posix_spawn(
            program[0],
            program,
            {**os.environ, HANDOVER_ENV: "1"},
            file_actions=[
                (os.POSIX_SPAWN_DUP2, read_end, 0),
                (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
                (os.POSIX_SPAWN_CLOSE, write_end),
            ],
            setsid=True,
        )
    finally:
        os.close(read_end)
    try:
        os.write(write_end, body)  # a hook's JSON fits the pipe's buffer; a larger one waits for the reader
    finally:
        os.close(write_end)
