"""`tap hook EVENT`: one agent hook event, from the JSON on stdin to the JSON on stdout, failing open.

Where the event goes:
- a `tap serve` holds the data dir (`<data dir>/server.json`): the stdin JSON is POSTed as it is to
  its `POST /tap/hooks/EVENT?agent=AGENT` (loopback, admin bearer token) and the answer body is
  printed unchanged: the server does the work, so this process only starts Python, reads two small
  files and makes one request (no msgspec, chromadb or onnxruntime import; see bridges.hooks);
- no server: `embedded(invocation, body)` handles it on the embedded store in this process (the
  composition root passes it in: tap.wiring.hook_service.run_embedded).

Fail-open: whatever goes wrong (bad arguments, unreadable config, server down or slow, store busy,
any exception) the process exits 0 with nothing on stdout, so the agent carries on without
memories, and leaves one line in `<data dir>/tap.log` (bridges.hooks.hooklog) and in the hook's
status (bridges.hooks.hook_db). A `Deadline` bounds the whole process: `[hooks] timeout_s` when a
server runs, `[hooks] embedded_timeout_s` when this process must open the store.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, NamedTuple

from bridges.admin_http import NoAnswer, exchange
from bridges.hooks import lightconfig
from bridges.hooks.deadline import Deadline
from bridges.hooks.hooklog import log_line
from bridges.hooks.names import AGENTS, EVENTS, cli_event
from tap import locations
from tap.errors import ConfigError

USAGE = (
    "usage: tap [--config PATH] hook EVENT [--agent claude|codex] [--config PATH]  (EVENT: " + ", ".join(EVENTS) + ")"
)


class HookFailed(Exception):
    """The event could not be handled (the message says why; it goes to the log)."""


class Invocation(NamedTuple):
    """What the command line asked for."""

    event: str
    agent: str = "claude"
    config: str | None = None


Embedded = Callable[[Invocation, bytes], bytes]
"""Handles an event without a server: the stdin bytes in, the stdout bytes out."""


def split_config(argv: list[str]) -> tuple[str | None, list[str]]:
    """Take the root `--config PATH` (or `--config=PATH`) off the front of the arguments."""
    config: str | None = None
    rest = list(argv)
    while rest and rest[0].startswith("--config"):
        if rest[0] == "--config" and len(rest) > 1:
            config, rest = rest[1], rest[2:]
        elif rest[0].startswith("--config="):
            config, rest = rest[0].split("=", 1)[1], rest[1:]
        else:
            break
    return config, rest


def is_hook_call(argv: list[str]) -> bool:
    """Whether `tap ARGV` is `tap [--config P] hook …` without a help flag (then it takes the fast path)."""
    _, rest = split_config(argv)
    return len(rest) >= 2 and rest[0] == "hook" and not {"-h", "--help"} & set(rest)


def parse_args(argv: list[str]) -> Invocation:
    """`[--config PATH] hook EVENT [--agent AGENT]`; ValueError says what is wrong."""
    config, rest = split_config(argv)
    if len(rest) < 2 or rest[0] != "hook":
        raise ValueError(USAGE)
    event = cli_event(rest[1])
    if event is None:
        raise ValueError(f"unknown hook event {rest[1]!r}; {USAGE}")
    agent = "claude"
    options = rest[2:]
    while options:
        if options[0] == "--agent" and len(options) > 1:
            agent, options = options[1], options[2:]
        elif options[0].startswith("--agent="):
            agent, options = options[0].split("=", 1)[1], options[1:]
        elif options[0].startswith("--config"):  # `--config` may follow the command, as for every command
            late, options = split_config(options)
            if late is None:
                raise ValueError(f"unexpected argument {options[0]!r}; {USAGE}")
            config = late
        else:
            raise ValueError(f"unexpected argument {options[0]!r}; {USAGE}")
    if agent not in AGENTS:
        raise ValueError(f"unknown agent {agent!r} (one of {', '.join(AGENTS)})")
    return Invocation(event=event, agent=agent, config=config)


def post_event(url: str, token: str, invocation: Invocation, body: bytes, timeout: float) -> bytes:
    """POST the hook JSON to the server's hook endpoint; the answer body (HookFailed otherwise)."""
    path = f"/tap/hooks/{invocation.event}?agent={invocation.agent}"
    try:
        status, data = exchange(url, "POST", path, token=token, body=body, timeout=timeout)
    except (NoAnswer, ValueError) as exc:
        raise HookFailed(str(exc)) from exc
    if status != 200:
        raise HookFailed(f"tap serve at {url} answered {status}: {data[:200].decode(errors='replace')}")
    return data


def _session_of(body: bytes) -> str:
    try:
        value = json.loads(body).get("session_id", "")
    except (ValueError, AttributeError):
        return "?"
    return str(value)[:64] or "?"


class _Reporter:
    """Writes the one log line (and the status row) for a failed event, once."""

    def __init__(self, data_dir: Path, invocation: Invocation) -> None:
        self.data_dir = data_dir
        self.invocation = invocation
        self.body = b""
        self.done = False

    def __call__(self, reason: str) -> None:
        if self.done:
            return
        self.done = True
        inv = self.invocation
        event = EVENTS.get(inv.event, inv.event)
        log_line(
            self.data_dir, f"hook {event} ({inv.agent}, session {_session_of(self.body)}): {reason}; exit 0, no output"
        )
        try:
            from bridges.hooks.hook_db import STATE_FILE, HookState

            state = HookState(self.data_dir / STATE_FILE)
            state.fired(inv.agent, inv.event, f"failed: {reason}")
            state.close()
        except Exception:  # the status row is a courtesy; the log line is written already
            pass


def run(
    argv: list[str],
    *,
    embedded: Embedded,
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
) -> int:
    """Handle one hook event (see the module docstring); always returns 0."""
    started = time.monotonic()
    try:
        invocation = parse_args(argv)
    except ValueError as exc:
        log_line(locations.data_dir(), f"hook: {exc}; exit 0, no output")
        print(f"tap: {exc}", file=sys.stderr)
        return 0
    try:
        config = lightconfig.load(invocation.config)
    except (ConfigError, OSError) as exc:
        _Reporter(locations.data_dir(), invocation)(str(exc))
        return 0
    report = _Reporter(config.data_dir, invocation)
    url = lightconfig.running_server(config)
    limit = config.timeout_s if url else config.embedded_timeout_s
    where = f"tap serve at {url}" if url else "the embedded store"
    deadline = Deadline(limit - (time.monotonic() - started), lambda: report(f"{where}: no answer within {limit:g} s"))
    output = b""
    try:
        report.body = body = (stdin or sys.stdin.buffer).read()
        if url:
            token = lightconfig.admin_token(config)
            if token is None:
                raise HookFailed(
                    f"no admin token (set ${config.token_env} or create {config.data_dir / 'admin-token'})"
                )
            # the socket waits a little past the deadline, so a slow server is always reported by it
            output = post_event(url, token, invocation, body, limit - (time.monotonic() - started) + 0.5)
        else:
            output = embedded(invocation, body)
    except Exception as exc:  # fail open: the agent must never see an error from tap
        report(str(exc) if isinstance(exc, HookFailed) else f"{type(exc).__name__}: {exc}")
        output = b""
    if not deadline.finish():
        time.sleep(60)  # the deadline is ending the process right now, silently
    if output:
        out = stdout or sys.stdout.buffer
        out.write(output)
        out.flush()
    return 0
