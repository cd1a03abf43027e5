"""tap's MCP server in the agents' own settings: what `tap hooks install` adds beside the hooks,
`uninstall` removes and `status` shows (docs/mcp.md).

Files, in each agent's documented format:
- Claude Code: user level `~/.claude.json` (`$CLAUDE_CONFIG_DIR/.claude.json` when set), project
  level `<project root>/.mcp.json`; both `{"mcpServers": {"tap": {"type": "stdio", "command": …,
  "args": […], "env": {…}}}}`. Claude Code rewrites `~/.claude.json` while it runs: install while
  it is stopped, or use the `claude mcp add` line `tap env mcp` prints.
- Codex: `~/.codex/config.toml` (`$CODEX_HOME/config.toml`), or the project's
  `.codex/config.toml`: a `[mcp_servers.tap]` table with `command`, `args`, `env` and
  `startup_timeout_sec`.

The entry runs this installation's `tap mcp` (with `--config` and `TAP_HOME` when tap had them at
install time: the agent starts it in the project's directory). Only an entry named `tap` that runs
`tap … mcp` is tap's: another server of that name is never overwritten or removed (`InstallError`),
and nothing else in a file changes. JSON files are edited as the hooks' are (bridges.hooks.install:
a file that is not valid JSON is refused, writes are atomic with a backup). The TOML file is
edited as text: tap's table (and its sub-tables) replaced or appended, every other line kept as it
was; the result must parse and hold exactly the entry, else nothing is written.
"""

from __future__ import annotations

import copy
import os
import re
import shutil
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w

from bridges.hooks.install import FileEdit, InstallError, indent_of, read_document, render
from bridges.hooks.scope import project_root

NAME = "tap"
STARTUP_TIMEOUT_S = 20
_TABLE = re.compile(r"^\s*\[\s*mcp_servers\s*\.\s*(?:tap|\"tap\")\s*(?:\]|\.)")
_HEADER = re.compile(r"^\s*\[")


@dataclass(frozen=True)
class Launch:
    """How an agent starts tap's MCP server."""

    command: str
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()

    def entry(self, agent: str) -> dict[str, Any]:
        """The server's entry in `agent`'s settings."""
        entry: dict[str, Any] = {"command": self.command, "args": list(self.args)}
        if self.env:
            entry["env"] = dict(self.env)
        if agent == "claude":
            return {"type": "stdio", **entry}
        return {**entry, "startup_timeout_sec": STARTUP_TIMEOUT_S}


def launch(config_path: Path | None = None) -> Launch:
    """This installation's `tap mcp` (the `tap` beside this Python, else on PATH, else `python -m tap`)."""
    beside = Path(sys.executable).with_name("tap")
    found = str(beside) if beside.is_file() else shutil.which("tap")
    command, prefix = (found, ()) if found else (sys.executable, ("-m", "tap"))
    config = ("--config", str(config_path.resolve())) if config_path is not None else ()
    home = os.environ.get("TAP_HOME")
    env = (("TAP_HOME", str(Path(home).expanduser().resolve())),) if home else ()
    return Launch(command, (*prefix, *config, "mcp"), env)


def settings_path(agent: str, level: str, cwd: Path) -> Path:
    """The file that registers MCP servers for `agent` (claude | codex) at `level` (user | project)."""
    if level == "project":
        base = project_root(cwd) or cwd
        return base / (".mcp.json" if agent == "claude" else ".codex/config.toml")
    if agent == "claude":
        home = os.environ.get("CLAUDE_CONFIG_DIR")
        return (Path(home).expanduser() if home else Path.home()) / ".claude.json"
    home = os.environ.get("CODEX_HOME")
    return (Path(home).expanduser() if home else Path.home() / ".codex") / "config.toml"


def is_tap_server(entry: object) -> bool:
    """Whether a server entry runs `tap … mcp` (this or another installation of tap)."""
    if not isinstance(entry, Mapping):
        return False
    command, args = entry.get("command"), entry.get("args")
    if not isinstance(command, str) or not isinstance(args, list) or not args or args[-1] != "mcp":
        return False
    return Path(command).name == "tap" or "tap" in args[:2]


# -- Claude Code: JSON ---------------------------------------------------------------------------------


def _servers(document: dict[str, Any], path: Path) -> dict[str, Any] | None:
    servers = document.get("mcpServers")
    if servers is not None and not isinstance(servers, dict):
        raise InstallError(f'{path}: "mcpServers" is not an object; not touching it')
    if servers is not None and NAME in servers and not is_tap_server(servers[NAME]):
        raise InstallError(f'{path}: an MCP server named "{NAME}" that is not tap\'s is there; rename it first')
    return servers


def _plan_json(path: Path, entry: dict[str, Any] | None) -> FileEdit:
    document, text = read_document(path)
    servers = _servers(document, path)
    after = copy.deepcopy(document)
    if entry is not None:
        after.setdefault("mcpServers", {})[NAME] = entry
    elif servers is not None and NAME in servers:
        del after["mcpServers"][NAME]
        if not after["mcpServers"]:
            del after["mcpServers"]
    if after == document:
        return FileEdit(path, text, text)
    return FileEdit(path, text, render(after, indent_of(text)))


# -- Codex: TOML -------------------------------------------------------------------------------------


def _read_toml(path: Path) -> tuple[dict[str, Any], str]:
    text = ""
    if path.exists():
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise InstallError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        return tomllib.loads(text), text
    except tomllib.TOMLDecodeError as exc:
        raise InstallError(f"{path} is not valid TOML ({exc}); fix or move it first, tap will not rewrite it") from exc


def _without_table(text: str) -> tuple[str, bool]:
    """The text without `[mcp_servers.tap]` and its sub-tables (and whether they were there)."""
    kept, inside, found = [], False, False
    for line in text.splitlines(keepends=True):
        if _HEADER.match(line):
            inside = bool(_TABLE.match(line))
            found = found or inside
        if not inside:
            kept.append(line)
    return "".join(kept), found


def _plan_toml(path: Path, entry: dict[str, Any] | None) -> FileEdit:
    document, text = _read_toml(path)
    current = document.get("mcp_servers", {}).get(NAME) if isinstance(document.get("mcp_servers"), dict) else None
    if current is not None and not is_tap_server(current):
        raise InstallError(f"{path}: [mcp_servers.{NAME}] is there and is not tap's; rename it first")
    if current == entry or (current is None and entry is None):
        return FileEdit(path, text, text)
    rest, found = _without_table(text)
    if current is not None and not found:
        raise InstallError(
            f"{path}: mcp_servers.{NAME} is not written as a [mcp_servers.{NAME}] table; edit it by hand"
        )
    after = rest
    if entry is not None:
        block = tomli_w.dumps({"mcp_servers": {NAME: entry}})
        after = (rest.rstrip("\n") + "\n\n" if rest.strip() else "") + block
    try:
        parsed = tomllib.loads(after)
    except tomllib.TOMLDecodeError as exc:
        raise InstallError(f"{path}: tap's table would not fit in this file ({exc}); add it by hand") from exc
    servers = parsed.get("mcp_servers", {})
    if servers.get(NAME) != entry or {k: v for k, v in parsed.items() if k != "mcp_servers"} != {
        k: v for k, v in document.items() if k != "mcp_servers"
    }:
        raise InstallError(f"{path}: editing it would change more than tap's table; add it by hand")
    return FileEdit(path, text, after)


# -- both ------------------------------------------------------------------------------------------------


def plan_register(agent: str, path: Path, entry: dict[str, Any]) -> FileEdit:
    """What registering tap's server in the file would do (nothing when it is there already)."""
    return _plan_json(path, entry) if agent == "claude" else _plan_toml(path, entry)


def plan_unregister(agent: str, path: Path) -> FileEdit:
    """What removing tap's server from the file would do."""
    return _plan_json(path, None) if agent == "claude" else _plan_toml(path, None)


def registered(agent: str, path: Path) -> dict[str, Any] | None:
    """tap's entry in the file (None when it has none)."""
    if agent == "claude":
        servers = _servers(read_document(path)[0], path) or {}
    else:
        parsed = _read_toml(path)[0].get("mcp_servers", {})
        servers = parsed if isinstance(parsed, dict) else {}
    entry = servers.get(NAME)
    return entry if is_tap_server(entry) else None
