"""`tap hooks install / uninstall / status`: tap's entries in the agents' hook settings files.

Files (docs/protocols.md, Agent hooks; Codex's `codex-rs/config/src/hook_config.rs`):
- Claude Code: `~/.claude/settings.json` (`$CLAUDE_CONFIG_DIR/settings.json` when set) or the
  project's `.claude/settings.json`; hooks live under `"hooks"`:
  `{"EventName": [{"matcher"?: "...", "hooks": [{"type": "command", "command": "...", "timeout": N}]}]}`,
  and an `http` hook is `{"type": "http", "url": "...", "headers": {...}, "allowedEnvVars": [...], "timeout": N}`.
- Codex: `~/.codex/hooks.json` (`$CODEX_HOME/hooks.json`) or the project's `.codex/hooks.json`, the
  same shape with only the top-level `"hooks"` key (older Codex versions reject any other key) and
  only `command` hooks (`timeout` in whole seconds; SessionEnd at most 3, which Codex enforces). Event
  names Codex does not know are ignored by it. Codex runs a hook only once the user has trusted it
  (bridges.hooks.codex_trust).

Merging never touches anything but tap's own entries: a hook is tap's when its command runs
`tap … hook EVENT` or its URL is a `/tap/hooks/` endpoint (`is_tap_hook`). Installing replaces
tap's entry of each event in place (else appends one matcher group), so running it twice changes
nothing the second time; uninstalling removes tap's entries and only the groups, event lists and
`hooks` object that it left empty. A file that is not valid JSON (or not an object) is never
rewritten: `InstallError` names it. Writes keep a timestamped backup of the old file beside it,
go through a temporary file and `os.replace` (the file is never half-written), and keep the file's mode.

Claude Code's entries are laid out so that a `claude -p` run waits for two hook processes
(UserPromptSubmit, Stop) instead of four: SessionEnd runs in the background (`"async": true`; it
outlives the agent and hands the last lines over), and SessionStart fires only after a /clear or
a compaction (its own group, with matcher `clear|compact`; the start digest of a new session comes
with its first prompt).

With `--http`, UserPromptSubmit and Stop (the events that fire every turn) become Claude Code
`http` hooks on `tap serve` — no process start per prompt — authenticated with the admin token
from the environment variable `[admin] token_env` names (Claude Code interpolates it into the
header only because it is listed in `allowedEnvVars`; the token itself is never written to a
settings file). SessionStart, PreCompact and SessionEnd stay command hooks: they are rare, and
they must work when no server runs.
"""

from __future__ import annotations

import copy
import difflib
import json
import os
import re
import shlex
import shutil
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bridges.hooks.names import EVENTS
from bridges.hooks.scope import project_root

COMMAND_TIMEOUTS = {"session-start": 15, "user-prompt-submit": 15, "stop": 30, "pre-compact": 60, "session-end": 5}
CODEX_TIMEOUTS = {**COMMAND_TIMEOUTS, "session-end": 3}
"""Codex clamps a SessionEnd hook's timeout to 3 s (and warns about it on every run when it is larger)."""
HTTP_TIMEOUTS = {"user-prompt-submit": 3, "stop": 5}
CLAUDE_ASYNC = ("session-end",)
"""Claude Code runs these in the background (`"async": true`). Not Stop: a one-shot `claude -p`
cancels a background Stop hook that is still running when the session ends, and its exit then took
~1.5 s longer than with the hook in the foreground (Claude Code 2.1.337, measured)."""
CLAUDE_START_SOURCES = "clear|compact"
"""Claude Code's SessionStart fires tap's hook only after a /clear or a compaction; a new or resumed
session gets its start digest with its first prompt instead (bridges.hooks.hook_session), one
process fewer on the way to every first answer."""
HTTP_EVENTS = tuple(HTTP_TIMEOUTS)

_EVENT_WORD = "|".join(EVENTS)
_TAP_COMMAND = re.compile(
    r"""(?:\btap\b['"]?|-m\s+tap)(?:\s+--config(?:=|\s+)(?:'[^']*'|"[^"]*"|\S+))?\s+hook\s+(?:""" + _EVENT_WORD + r")\b"
)


class InstallError(Exception):
    """A settings file tap will not touch (unreadable, not JSON, unexpected shape)."""


@dataclass(frozen=True)
class Target:
    """One settings file of one agent."""

    agent: str
    level: str
    path: Path


@dataclass(frozen=True)
class HookCall:
    """How the agent calls tap: the command prefix, and for `--http` the server and the token variable."""

    command: str
    http_url: str = ""
    token_env: str = "TAP_ADMIN_TOKEN"


@dataclass(frozen=True)
class FileEdit:
    """A settings file before and after."""

    path: Path
    before: str
    after: str

    @property
    def changed(self) -> bool:
        """Whether writing it would change anything."""
        return self.before != self.after

    def diff(self) -> str:
        """A unified diff of the change (empty when there is none)."""
        lines = difflib.unified_diff(
            self.before.splitlines(keepends=True),
            self.after.splitlines(keepends=True),
            fromfile=f"{self.path} (now)",
            tofile=f"{self.path} (after)",
        )
        return "".join(lines)


# -- where -------------------------------------------------------------------------------------------


def target(agent: str, level: str, cwd: Path) -> Target:
    """The settings file of `agent` (claude | codex) at `level` (user | project, the project of `cwd`)."""
    if level == "project":
        base = project_root(cwd) or cwd
        name = ".claude/settings.json" if agent == "claude" else ".codex/hooks.json"
        return Target(agent, level, base / name)
    if agent == "claude":
        home = os.environ.get("CLAUDE_CONFIG_DIR")
        return Target(agent, level, (Path(home).expanduser() if home else Path.home() / ".claude") / "settings.json")
    home = os.environ.get("CODEX_HOME")
    return Target(agent, level, (Path(home).expanduser() if home else Path.home() / ".codex") / "hooks.json")


def tap_command(config_path: Path | None = None) -> str:
    """The shell command that runs this installation's `tap` (with TAP_HOME and --config when set)."""
    beside = Path(sys.executable).with_name("tap")
    found = str(beside) if beside.is_file() else shutil.which("tap")
    command = shlex.quote(found) if found else f"{shlex.quote(sys.executable)} -m tap"
    home = os.environ.get("TAP_HOME")
    if home:
        command = f"TAP_HOME={shlex.quote(str(Path(home).expanduser().resolve()))} {command}"
    if config_path is not None:
        command += f" --config {shlex.quote(str(config_path.resolve()))}"
    return command


# -- what ---------------------------------------------------------------------------------------------


def entries(agent: str, call: HookCall) -> dict[str, dict[str, Any]]:
    """tap's hook entry for each event, by the event's name in the settings file."""
    out: dict[str, dict[str, Any]] = {}
    for event, name in EVENTS.items():
        if agent == "claude" and call.http_url and event in HTTP_EVENTS:
            out[name] = {
                "type": "http",
                "url": f"{call.http_url.rstrip('/')}/tap/hooks/{event}",
                "headers": {"Authorization": f"Bearer ${{{call.token_env}}}"},
                "allowedEnvVars": [call.token_env],
                "timeout": HTTP_TIMEOUTS[event],
            }
            continue
        agent_flag = " --agent codex" if agent == "codex" else ""
        out[name] = {
            "type": "command",
            "command": f"{call.command} hook {event}{agent_flag}",
            "timeout": (CODEX_TIMEOUTS if agent == "codex" else COMMAND_TIMEOUTS)[event],
        }
        if agent == "claude" and event in CLAUDE_ASYNC:
            out[name]["async"] = True
    return out


def group_matchers(agent: str) -> dict[str, str]:
    """The matcher of tap's own group, by event name, for the events that need one."""
    return {EVENTS["session-start"]: CLAUDE_START_SOURCES} if agent == "claude" else {}


def is_tap_hook(hook: object) -> bool:
    """Whether a hook entry is one of tap's (its command runs `tap … hook EVENT`, or its URL is tap's)."""
    if not isinstance(hook, Mapping):
        return False
    if hook.get("type") == "http":
        return isinstance(hook.get("url"), str) and "/tap/hooks/" in hook["url"]
    command = hook.get("command")
    return isinstance(command, str) and _TAP_COMMAND.search(command) is not None


def _hooks_table(document: dict[str, Any], path: Path) -> dict[str, Any] | None:
    hooks = document.get("hooks")
    if hooks is None:
        return None
    if not isinstance(hooks, dict) or not all(isinstance(v, list) for v in hooks.values()):
        raise InstallError(f'{path}: "hooks" is not an object of event lists; not touching it')
    return hooks


def _groups_with_tap(groups: list[Any]) -> list[tuple[dict[str, Any], int]]:
    """(group, index in its hooks) of each of tap's entries, in order."""
    found = []
    for group in groups:
        if isinstance(group, dict) and isinstance(group.get("hooks"), list):
            found += [(group, i) for i, hook in enumerate(group["hooks"]) if is_tap_hook(hook)]
    return found


def merged(
    document: dict[str, Any],
    new: Mapping[str, dict[str, Any]],
    path: Path,
    matchers: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The document with tap's entries set to `new` (in place of the old ones), nothing else changed.

    An event in `matchers` gets tap's entry in a group of its own with that matcher (moved there
    from a group with another matcher); the others keep it where it is.
    """
    out = copy.deepcopy(document)
    hooks = _hooks_table(out, path)
    if hooks is None:
        hooks = out["hooks"] = {}
    for name in list(hooks):
        if name not in new:
            _drop_tap(hooks, name)
    for name, entry in new.items():
        groups = hooks.setdefault(name, [])
        found = _groups_with_tap(groups)
        matcher = (matchers or {}).get(name)
        if matcher is not None and found and (found[0][0].get("matcher") != matcher or len(found[0][0]["hooks"]) > 1):
            _drop_tap(hooks, name)  # tap's entry needs a group of its own, with its matcher
            groups = hooks.setdefault(name, [])
            found = []
        if not found:
            groups.append({"matcher": matcher, "hooks": [entry]} if matcher is not None else {"hooks": [entry]})
            continue
        first_group, first_index = found[0]
        first_group["hooks"][first_index] = entry
        for group, index in reversed(found[1:]):
            del group["hooks"][index]
        emptied = {id(group) for group, _ in found[1:] if not group["hooks"]}
        hooks[name] = [g for g in groups if id(g) not in emptied]
    return out


def _drop_tap(hooks: dict[str, Any], name: str) -> int:
    """Remove tap's entries of one event (and what that leaves empty); returns how many."""
    removed = 0
    kept_groups = []
    for group in hooks[name]:
        if isinstance(group, dict) and isinstance(group.get("hooks"), list):
            kept = [hook for hook in group["hooks"] if not is_tap_hook(hook)]
            removed += len(group["hooks"]) - len(kept)
            if not kept and group["hooks"]:
                continue
            group = {**group, "hooks": kept}
        kept_groups.append(group)
    if kept_groups or not removed:
        hooks[name] = kept_groups
    else:
        del hooks[name]
    return removed


def without_tap(document: dict[str, Any], path: Path) -> tuple[dict[str, Any], int]:
    """The document without tap's entries, and how many there were."""
    out = copy.deepcopy(document)
    hooks = _hooks_table(out, path)
    if hooks is None:
        return out, 0
    removed = sum(_drop_tap(hooks, name) for name in list(hooks))
    if removed and not hooks:
        del out["hooks"]
    return out, removed


def installed(document: dict[str, Any], path: Path) -> dict[str, str]:
    """Event name → `command` or `http`, for each event where one of tap's entries is set."""
    hooks = _hooks_table(document, path) or {}
    found: dict[str, str] = {}
    for name, groups in hooks.items():
        for group, index in _groups_with_tap(groups):
            found.setdefault(name, str(group["hooks"][index].get("type", "command")))
    return found


# -- files --------------------------------------------------------------------------------------------


def read_document(path: Path) -> tuple[dict[str, Any], str]:
    """The parsed settings file and its text ({} and "" when it does not exist or is empty)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, ""
    except OSError as exc:
        raise InstallError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if not text.strip():
        return {}, text
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise InstallError(f"{path} is not valid JSON ({exc}); fix or move it first, tap will not rewrite it") from exc
    if not isinstance(document, dict):
        raise InstallError(f"{path} does not hold a JSON object; tap will not rewrite it")
    return document, text


def indent_of(text: str) -> int:
    """The indentation the file already uses (2 when it has none)."""
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" ")
        if stripped and len(stripped) < len(line):
            return len(line) - len(stripped)
    return 2


def render(document: dict[str, Any], indent: int = 2) -> str:
    """The file text tap writes: indented JSON and a final newline."""
    return json.dumps(document, indent=indent, ensure_ascii=False) + "\n"


def plan_install(path: Path, new: Mapping[str, dict[str, Any]], matchers: Mapping[str, str] | None = None) -> FileEdit:
    """What installing `new` into the file would do (nothing when tap's entries are already these)."""
    document, text = read_document(path)
    after = merged(document, new, path, matchers)
    return FileEdit(path, text, text if text and after == document else render(after, indent_of(text)))


def plan_uninstall(path: Path) -> FileEdit:
    """What removing tap's entries from the file would do."""
    document, text = read_document(path)
    cleaned, removed = without_tap(document, path)
    return FileEdit(path, text, render(cleaned, indent_of(text)) if removed else text)


def write(change: FileEdit, *, now: float | None = None) -> Path | None:
    """Apply a change (atomically, keeping the mode); returns the backup of the old file, if there was one."""
    path = change.path
    backup = None
    mode = 0o644
    if path.exists():
        mode = path.stat().st_mode & 0o7777
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
        backup = path.with_name(f"{path.name}.bak-{stamp}")
        shutil.copy2(path, backup)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tap-{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(change.after)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return backup
