"""Codex's trust in tap's hooks: whether Codex will run them, and recording that trust when asked.

Codex (openai/codex: codex-rs/hooks/src/engine/discovery.rs and config_rules.rs; checked against
the real Codex CLI 0.171.0 by tests/clients/test_real_clients.py) runs a hook from a `hooks.json`
only when the user's `config.toml` (`$CODEX_HOME/config.toml`, else `~/.codex/config.toml`) holds

    [hooks.state."<absolute path of hooks.json>:<event label>:<group index>:<handler index>"]
    trusted_hash = "sha256:…"

equal to the hook's current hash, and `enabled` is not false. Otherwise it skips the hook without
a word (`codex exec` too). The TUI's `/hooks` writes that entry when the user trusts a hook;
`codex exec --dangerously-bypass-hook-trust` runs untrusted hooks for one invocation.

The hash: sha256 over compact JSON, keys sorted, of {"event_name": label, "matcher"?: …, "hooks":
[{"type": "command", "command": …, "timeout": …, "async": …, "statusMessage"?: …}]}: the
timeout as Codex normalises it (600 when absent; SessionEnd 1 when absent, at most 3), the matcher
left out for UserPromptSubmit and Stop, absent optional fields left out. A hash tap computes that
differs from the one recorded means the entry changed since it was trusted (or this Codex
computes it another way): either way Codex will not run it until it is trusted again.

`trust_of` reads the state of each of tap's entries; `plan_trust` is the edit of `config.toml`
that records trust for them (`tap hooks install --codex --trust`): it appends a table per missing
key and rewrites only the `trusted_hash` line of an existing one, keeps everything else of the
file as it is, and refuses (`InstallError`) a file it cannot edit that way or whose result would
not read back as intended.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from bridges.hooks.install import FileEdit, InstallError, is_tap_hook

SESSION_END_MAX_TIMEOUT_S = 3
"""Codex clamps a SessionEnd hook's timeout to this (and warns on every run when it is larger)."""
LABELS = {
    "PreToolUse": "pre_tool_use",
    "PermissionRequest": "permission_request",
    "PostToolUse": "post_tool_use",
    "PreCompact": "pre_compact",
    "PostCompact": "post_compact",
    "SessionStart": "session_start",
    "SessionEnd": "session_end",
    "UserPromptSubmit": "user_prompt_submit",
    "SubagentStart": "subagent_start",
    "SubagentStop": "subagent_stop",
    "Stop": "stop",
}
_NO_MATCHER = ("UserPromptSubmit", "Stop")

Trust = Literal["trusted", "untrusted", "changed", "disabled"]


@dataclass(frozen=True)
class Entry:
    """One of tap's hooks in a Codex hooks.json: its trust key and its current hash."""

    event: str
    key: str
    hash: str


def config_path() -> Path:
    """The user's Codex config.toml (where Codex keeps hook trust)."""
    home = os.environ.get("CODEX_HOME")
    return (Path(home).expanduser() if home else Path.home() / ".codex") / "config.toml"


def hook_hash(event: str, matcher: str | None, handler: Mapping[str, Any]) -> str:
    """The hash Codex records for a trusted command hook (see the module docstring)."""
    timeout = handler.get("timeout")
    if event == "SessionEnd":
        timeout = min(max(int(timeout) if isinstance(timeout, int) else 1, 1), SESSION_END_MAX_TIMEOUT_S)
    else:
        timeout = max(int(timeout), 1) if isinstance(timeout, int) else 600
    normalised: dict[str, Any] = {
        "type": "command",
        "command": handler.get("command", ""),
        "timeout": timeout,
        "async": bool(handler.get("async", False)),
    }
    if isinstance(handler.get("statusMessage"), str):
        normalised["statusMessage"] = handler["statusMessage"]
    identity: dict[str, Any] = {"event_name": LABELS[event], "hooks": [normalised]}
    if matcher is not None and event not in _NO_MATCHER:
        identity["matcher"] = matcher
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def tap_entries(document: Mapping[str, Any], hooks_file: Path) -> list[Entry]:
    """tap's command hooks in a parsed Codex hooks.json, with their trust keys and hashes."""
    hooks = document.get("hooks")
    found: list[Entry] = []
    if not isinstance(hooks, Mapping):
        return found
    for event, groups in hooks.items():
        if event not in LABELS or not isinstance(groups, list):
            continue
        for group_index, group in enumerate(groups):
            if not isinstance(group, Mapping) or not isinstance(group.get("hooks"), list):
                continue
            matcher = group.get("matcher") if isinstance(group.get("matcher"), str) else None
            for handler_index, handler in enumerate(group["hooks"]):
                if is_tap_hook(handler) and handler.get("type", "command") == "command":
                    key = f"{hooks_file}:{LABELS[event]}:{group_index}:{handler_index}"
                    found.append(Entry(event, key, hook_hash(event, matcher, handler)))
    return found


def _states(config: Path) -> dict[str, Any]:
    """`hooks.state` of a config.toml ({} when the file or the table is missing)."""
    try:
        document = tomllib.loads(config.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise InstallError(f"cannot read {config}: {exc}") from exc
    hooks = document.get("hooks")
    states = hooks.get("state") if isinstance(hooks, dict) else None
    return states if isinstance(states, dict) else {}


def trust_of(entries: list[Entry], config: Path) -> dict[str, Trust]:
    """Each entry's trust in Codex, by event name."""
    states = _states(config)
    found: dict[str, Trust] = {}
    for entry in entries:
        state = states.get(entry.key)
        if not isinstance(state, dict) or not state.get("trusted_hash"):
            found[entry.event] = (
                "disabled" if isinstance(state, dict) and state.get("enabled") is False else "untrusted"
            )
        elif state.get("enabled") is False:
            found[entry.event] = "disabled"
        else:
            found[entry.event] = "trusted" if state["trusted_hash"] == entry.hash else "changed"
    return found


def _header(key: str) -> str:
    return f"[hooks.state.{json.dumps(key, ensure_ascii=False)}]"


def plan_trust(entries: list[Entry], config: Path) -> FileEdit:
    """The edit of config.toml that records Codex trust for `entries` (see the module docstring)."""
    try:
        before = config.read_text(encoding="utf-8")
    except FileNotFoundError:
        before = ""
    states = _states(config)
    after = before
    for entry in entries:
        state = states.get(entry.key)
        if isinstance(state, dict) and state.get("trusted_hash") == entry.hash:
            continue
        after = _with_hash(after, entry, present=isinstance(state, dict), config=config)
    if after != before and not _reads_back(after, entries):
        raise InstallError(f"{config}: could not record the trust of tap's hooks safely; trust them in `/hooks`")
    return FileEdit(config, before, after)


def _reads_back(text: str, entries: list[Entry]) -> bool:
    """Whether the edited file parses and holds each entry's hash."""
    try:
        hooks = tomllib.loads(text).get("hooks", {})
    except tomllib.TOMLDecodeError:
        return False
    states = hooks.get("state", {}) if isinstance(hooks, dict) else {}
    return all(isinstance(states.get(e.key), dict) and states[e.key].get("trusted_hash") == e.hash for e in entries)


def _with_hash(text: str, entry: Entry, *, present: bool, config: Path) -> str:
    line = f'trusted_hash = "{entry.hash}"'
    if not present:
        separator = "" if not text or text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
        return f"{text}{separator}{_header(entry.key)}\n{line}\n"
    header = re.search(rf"^[ \t]*{re.escape(_header(entry.key))}[ \t]*(#.*)?$", text, re.MULTILINE)
    if header is None:
        raise InstallError(
            f"{config}: the trust entry {entry.key!r} is written in a form tap does not edit; trust tap's hooks in "
            "`/hooks` instead"
        )
    body_start = header.end() + 1
    next_table = re.search(r"^[ \t]*\[", text[body_start:], re.MULTILINE)
    body_end = body_start + next_table.start() if next_table else len(text)
    body = text[body_start:body_end]
    if re.search(r"^[ \t]*trusted_hash[ \t]*=.*$", body, re.MULTILINE):
        body = re.sub(r"^[ \t]*trusted_hash[ \t]*=.*$", line, body, count=1, flags=re.MULTILINE)
    else:
        body = f"{line}\n{body}"
    return text[:body_start] + body + text[body_end:]
