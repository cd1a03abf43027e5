"""`tap mcp`: the MCP server over stdio, as an agent starts it (tap.wiring.mcp_stdio; docs/mcp.md),
and its registration in the agents' settings, which `tap hooks install | uninstall | status` call
(bridges.mcp.install) and `tap env mcp` prints the manual lines of.

`tap mcp` finds its config as a hook does (`--config`, `$TAP_CONFIG`, the user config folder;
never a `./config.toml` of the project the agent runs in). stdout carries the protocol only; logs
go to stderr.
"""

from __future__ import annotations

import shlex
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import click

from bridges.hooks.install import FileEdit, InstallError, write
from bridges.mcp.install import launch, plan_register, plan_unregister, registered, settings_path
from tap.cli.shared import state


@click.command("mcp")
@click.option("--scope", default=None, help="The scope the tools use (default: [hooks] scope, else the project).")
def mcp(scope: str | None) -> None:
    """Run tap's MCP server over stdio (what an agent starts; `tap hooks install` registers it)."""
    from tap.wiring.agent_config import load_hook_config
    from tap.wiring.mcp_stdio import serve_stdio, stdio_scope

    loaded = load_hook_config(state().config_path)
    try:
        tap_version = version("tap-memory")
    except PackageNotFoundError:
        tap_version = "0+unknown"
    serve_stdio(loaded, stdio_scope(loaded, scope), tap_version)


# -- registration in the agents' settings (called by `tap hooks install | uninstall | status`) ----------


def _apply(path: Path, change: FileEdit, dry_run: bool, done: str, already: str) -> None:
    if dry_run:
        click.echo(change.diff() or f"{path}: no change")
    elif not change.changed:
        click.echo(f"{path}: {already}; nothing to do")
    else:
        backup = write(change)
        click.echo(f"{path}: {done}" + (f" (backup: {backup.name})" if backup else ""))


def register_server(agent: str, level: str, config_path: Path | None, *, dry_run: bool) -> None:
    """Register `tap mcp` in `agent`'s MCP settings at `level` (the project of the current directory)."""
    path = settings_path(agent, level, Path.cwd())
    try:
        change = plan_register(agent, path, launch(config_path).entry(agent))
        _apply(path, change, dry_run, "tap's MCP server registered", "tap's MCP server is already registered")
    except InstallError as exc:
        raise click.ClickException(str(exc)) from exc


def unregister_server(agent: str, level: str, *, dry_run: bool) -> None:
    """Remove `tap mcp` from `agent`'s MCP settings at `level`."""
    path = settings_path(agent, level, Path.cwd())
    try:
        _apply(path, plan_unregister(agent, path), dry_run, "tap's MCP server removed", "no MCP server of tap's")
    except InstallError as exc:
        raise click.ClickException(str(exc)) from exc


def server_status(cwd: Path) -> list[dict[str, Any]]:
    """Where tap's MCP server is registered: agent, level, file, and the command (or an error)."""
    found = []
    for agent in ("claude", "codex"):
        for level in ("user", "project"):
            path = settings_path(agent, level, cwd)
            try:
                entry = registered(agent, path)
                shown: str | None = " ".join([entry["command"], *entry["args"]]) if entry else None
            except InstallError as exc:
                shown = f"error: {exc}"
            found.append({"agent": agent, "level": level, "path": str(path), "server": shown})
    return found


def manual_lines(config_path: Path | None, server_url: str, token_env: str) -> list[str]:
    """How to register the server by hand (`tap env mcp`)."""
    how = launch(config_path)
    command = " ".join(shlex.quote(part) for part in (how.command, *how.args))
    claude_env = "".join(f" -e {k}={shlex.quote(v)}" for k, v in how.env)
    codex_env = "".join(f" --env {k}={shlex.quote(v)}" for k, v in how.env)
    return [
        "# MCP server (tools: search_memories, remember, forget, recent_memories, why);",
        "# `tap hooks install` registers it; by hand:",
        f"claude mcp add --scope user{claude_env} tap -- {command}",
        f"codex mcp add{codex_env} tap -- {command}",
        "# or over HTTP on a running tap serve (scope: the x-tap-scope header, default 'default'):",
        f"claude mcp add --transport http tap {server_url}/mcp --header 'Authorization: Bearer ${{{token_env}}}'",
    ]
