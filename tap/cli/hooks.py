"""`tap hook EVENT` and `tap hooks install | uninstall | status`: agent hooks for Claude Code and Codex.

`tap hook EVENT [--agent claude|codex]` is what the agents run (JSON on stdin, JSON on stdout,
always exit 0; bridges.hooks.command). The installed `tap` script reaches it through tap.cli.launch
without importing this module, so it starts fast; this click command is the same behaviour for
`--help`, `python -m tap` and tests.

`tap hooks install` writes tap's hooks into one settings file (bridges.hooks.install: merged next
to the user's own hooks, idempotent, backed up, `--dry-run` prints the diff) and registers tap's
MCP server in the same agent's MCP settings at the same level (tap.cli.mcp; `--no-mcp` skips it);
for Codex it says whether Codex trusts the hooks yet (it skips untrusted hooks silently) and
`--trust` records that trust (bridges.hooks.codex_trust); `uninstall` removes both; `status` shows
the scope rule and this directory's scope, the server, what is installed where (and Codex's trust
in it), when each hook last fired and the last problems from `<data dir>/tap.log`.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from bridges.hooks.codex_trust import config_path as codex_config_path
from bridges.hooks.codex_trust import plan_trust, tap_entries, trust_of
from bridges.hooks.command import Invocation, run
from bridges.hooks.hook_db import STATE_FILE, HookState
from bridges.hooks.hooklog import last_lines, log_path
from bridges.hooks.install import (
    HTTP_EVENTS,
    HookCall,
    InstallError,
    Target,
    entries,
    group_matchers,
    installed,
    plan_install,
    plan_uninstall,
    read_document,
    tap_command,
    target,
    write,
)
from bridges.hooks.names import AGENTS, EVENTS
from bridges.hooks.scope import hook_scope
from tap.admin_token import ensure_token, read_server_info
from tap.cli.mcp import register_server, server_status, unregister_server
from tap.cli.shared import emit_json, state
from tap.config import LoadedConfig

WHAT_EACH_DOES = """\
  SessionStart       the project's most important memories (again after /compact and /clear)
  UserPromptSubmit   memories relevant to the prompt (not the ones this session already has)
  Stop               the turn's transcript lines go to extraction at once
  PreCompact         everything not yet extracted goes before the context is compacted
  SessionEnd         the last lines go to extraction (quickly)"""


def _embedded(invocation: Invocation, body: bytes) -> bytes:
    from tap.wiring.hook_service import run_embedded  # the store and pipeline: only without a server

    return run_embedded(invocation, body)


@click.command("hook")
@click.argument("event", metavar="EVENT")
@click.option("--agent", type=click.Choice(AGENTS), default="claude", show_default=True, help="Which agent calls.")
def hook(event: str, agent: str) -> None:
    """Handle one agent hook event: hook JSON on stdin, hook output on stdout, always exit 0.

    EVENT: session-start, user-prompt-submit, stop, pre-compact or session-end (or the agents'
    spelling, e.g. UserPromptSubmit). Installed by `tap hooks install`; see docs/ways-in.md: Agent hooks.
    """
    config = state().config_path
    argv = (["--config", config] if config else []) + ["hook", event, "--agent", agent]
    run(argv, embedded=_embedded)


@click.group("hooks")
def hooks() -> None:
    """Install, remove and inspect tap's Claude Code and Codex hooks."""


agent_options: list[Any] = [
    click.option("--claude", is_flag=True, help="Claude Code (the default when no agent is named)."),
    click.option("--codex", is_flag=True, help="Codex (with --claude: both)."),
    click.option("--user", is_flag=True, help="Your user settings (default)."),
    click.option("--project", is_flag=True, help="This project's settings (git root, else here)."),
    click.option("--dry-run", is_flag=True, help="Print the change as a diff; write nothing."),
]


def _with_agent_options(fn: Any) -> Any:
    for option in reversed(agent_options):
        fn = option(fn)
    return fn


def chosen_agents(claude: bool, codex: bool) -> list[str]:
    """The agents the flags name, in a fixed order: Claude Code when none is named, both when both are."""
    return [agent for agent, named in (("claude", claude), ("codex", codex)) if named] or ["claude"]


def chosen_level(user: bool, project: bool) -> str:
    """`user` (the default) or `project`; naming both is an error (they are different files)."""
    if user and project:
        raise click.UsageError("give --user or --project, not both (run the command once for each)")
    return "project" if project else "user"


def server_url(loaded: LoadedConfig) -> str:
    """The running server's URL, else the configured address (a wildcard host becomes loopback)."""
    info = read_server_info(loaded.data_dir)
    if info is not None:
        return info.url
    host = loaded.config.server.host
    host = "127.0.0.1" if host in ("", "0.0.0.0") else "[::1]" if host == "::" else host
    return f"http://{f'[{host}]' if ':' in host and not host.startswith('[') else host}:{loaded.config.server.port}"


def _apply(change_target: Target, change: Any, dry_run: bool, verb: str) -> bool:
    if dry_run:
        click.echo(change.diff() or f"{change_target.path}: no change")
        return False
    if not change.changed:
        click.echo(f"{change_target.path}: tap's hooks are already {verb}; nothing to do")
        return False
    backup = write(change)
    click.echo(f"{change_target.path}: tap's hooks {verb}" + (f" (backup: {backup.name})" if backup else ""))
    return True


@hooks.command("install")
@_with_agent_options
@click.option("--http", is_flag=True, help="Claude Code: UserPromptSubmit and Stop as http hooks on tap serve.")
@click.option(
    "--trust",
    is_flag=True,
    help="Codex: record that you trust tap's hooks (as /hooks does), so headless `codex exec` runs them.",
)
@click.option("--no-mcp", is_flag=True, help="Do not register tap's MCP server (`tap mcp`).")
def install(
    claude: bool, codex: bool, user: bool, project: bool, dry_run: bool, http: bool, trust: bool, no_mcp: bool
) -> None:
    """Add tap's hooks to Claude Code's or Codex's settings (or both's), next to your own hooks."""
    loaded = state().load()
    agents, level = chosen_agents(claude, codex), chosen_level(user, project)
    if http and "codex" in agents:
        raise click.UsageError("Codex runs command hooks only; drop --http (or install Claude Code's on its own)")
    if trust and "codex" not in agents:
        raise click.UsageError("--trust is for Codex (Claude Code runs the hooks in its settings without it)")
    token_env = loaded.config.admin.token_env or "TAP_ADMIN_TOKEN"
    call = HookCall(tap_command(loaded.path), server_url(loaded) if http else "", token_env)
    if http and not dry_run:
        ensure_token(loaded.data_dir, token_env)  # so the `export` line below works before the first `tap serve`
    trusted = ""
    for agent in agents:
        where = target(agent, level, Path.cwd())
        try:
            change = plan_install(where.path, entries(agent, call), group_matchers(agent))
            _apply(where, change, dry_run, "installed")
            if agent == "codex":
                trusted = _codex_trust(change, trust=trust, dry_run=dry_run)
        except InstallError as exc:
            raise click.ClickException(str(exc)) from exc
        if not no_mcp:
            register_server(agent, level, loaded.path, dry_run=dry_run)
    if not dry_run:
        click.echo(f"\nWhat each hook does:\n{WHAT_EACH_DOES}\n")
        click.echo(_next_steps(agents, level, http, call, loaded))
    if trusted:
        click.echo(trusted)


def _codex_trust(change: Any, *, trust: bool, dry_run: bool) -> str:
    """Record Codex's trust in tap's hooks (`trust`), and say where that trust stands."""
    document = json.loads(change.after) if change.after.strip() else {}
    tap_hooks = tap_entries(document, change.path)
    config = codex_config_path()
    if trust:
        edit = plan_trust(tap_hooks, config)
        if dry_run:
            return edit.diff() or f"{config}: Codex trusts tap's hooks already"
        if edit.changed:
            backup = write(edit)
            note = f" (backup: {backup.name})" if backup else ""
            click.echo(f"{config}: recorded that you trust tap's hooks, as Codex's /hooks does{note}")
    if dry_run:
        return ""
    try:
        return codex_trust_line(trust_of(tap_hooks, config), config)
    except InstallError as exc:  # the install stands; only Codex's trust cannot be told
        return f"Whether Codex trusts tap's hooks cannot be told: {exc}"


CODEX_STATES = {
    "untrusted": "not trusted",
    "changed": "changed since you trusted them",
    "disabled": "disabled in /hooks",
}


def codex_trust_line(states: Mapping[str, str], config: Path) -> str:
    """What Codex will do with tap's hooks, and how to trust them when it will not run them."""
    if not states:
        return ""
    if all(state == "trusted" for state in states.values()):
        return f"Codex trusts tap's hooks ({config}): they run in `codex` and in `codex exec`."
    lines = ["Codex will NOT run these of tap's hooks (it skips them without a word, in `codex exec` too):"]
    for kind, why in CODEX_STATES.items():
        events = [event for event, found in states.items() if found == kind]
        if events:
            lines.append(f"  {why}: {', '.join(events)}")
    lines += [
        "Trust them: start `codex`, open /hooks and trust them; or run `tap hooks install --codex --trust`,",
        f"which records the same trust in {config} (for headless use); or, per run,",
        "`codex exec --dangerously-bypass-hook-trust` (runs every untrusted hook). Enable disabled ones in /hooks.",
    ]
    return "\n".join(lines)


def _next_steps(agents: list[str], level: str, http: bool, call: HookCall, loaded: LoadedConfig) -> str:
    server = "running" if read_server_info(loaded.data_dir) else "not running"
    lines = [
        f"tap serve is {server}. With it each prompt costs one loopback request; without it the hook opens",
        "the store itself (a few seconds per prompt): run `tap serve` (or `./dev serve`) while you work.",
    ]
    if "claude" in agents:
        lines.append("Start a new Claude Code session to load the hooks (`/hooks` lists them).")
        if http:
            lines += [
                f"The http hooks ({', '.join(EVENTS[e] for e in HTTP_EVENTS)}) go to {call.http_url} and need tap's",
                f"admin token in ${call.token_env} where Claude Code starts:",
                f'  export {call.token_env}="$(cat {loaded.data_dir / "admin-token"})"',
            ]
    if "codex" in agents:
        lines.append(
            "Older Codex versions also need hooks switched on in ~/.codex/config.toml: [features] codex_hooks = true."
        )
        if level == "project":
            lines.append("Project hooks load only in a trusted project (Codex asks when you open it).")
    return "\n".join(lines)


@hooks.command("uninstall")
@_with_agent_options
def uninstall(claude: bool, codex: bool, user: bool, project: bool, dry_run: bool) -> None:
    """Remove tap's hooks and MCP server from Claude Code's or Codex's settings, or both's (your own stay)."""
    level = chosen_level(user, project)
    for agent in chosen_agents(claude, codex):
        where = target(agent, level, Path.cwd())
        try:
            _apply(where, plan_uninstall(where.path), dry_run, "removed")
        except InstallError as exc:
            raise click.ClickException(str(exc)) from exc
        unregister_server(agent, level, dry_run=dry_run)


@hooks.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
def status(as_json: bool) -> None:
    """Scope, server, where tap's hooks are installed, and when each last fired."""
    doc = status_doc(state().load(), Path.cwd())
    if as_json:
        emit_json(doc)
        return
    click.echo(render_status(doc))


def status_doc(loaded: LoadedConfig, cwd: Path) -> dict[str, Any]:
    """Everything `tap hooks status` shows, as JSON-able builtins."""
    config = loaded.config.hooks
    info = read_server_info(loaded.data_dir)
    targets = []
    for agent in AGENTS:
        for level in ("user", "project"):
            where = target(agent, level, cwd)
            item: dict[str, Any] = {"agent": agent, "level": level, "path": str(where.path)}
            try:
                document = read_document(where.path)[0]
                item["hooks"] = installed(document, where.path)
                if agent == "codex" and item["hooks"]:
                    try:
                        item["codex_trust"] = trust_of(tap_entries(document, where.path), codex_config_path())
                    except InstallError as exc:
                        item["codex_trust_error"] = str(exc)
            except InstallError as exc:
                item["hooks"] = f"error: {exc}"
            targets.append(item)
    return {
        "scope_rule": f"one scope: {config.scope}" if config.scope else "per project (git root of cwd, else cwd)",
        "scope_here": hook_scope(config.scope, str(cwd)),
        "server": info.url if info else None,
        "timeout_s": config.timeout_s,
        "embedded_timeout_s": config.embedded_timeout_s,
        "installed": targets,
        "mcp": server_status(cwd),
        "last_fired": _last_fired(loaded.data_dir),
        "token_env": loaded.config.admin.token_env or "TAP_ADMIN_TOKEN",
        "token_env_set": bool(os.environ.get(loaded.config.admin.token_env or "TAP_ADMIN_TOKEN")),
        "log": str(log_path(loaded.data_dir)),
        "log_tail": last_lines(loaded.data_dir, 5),
    }


def _last_fired(data_dir: Path) -> list[dict[str, Any]]:
    path = data_dir / STATE_FILE
    if not path.exists():
        return []
    hook_state = HookState(path)
    try:
        fired = hook_state.last_fired()
    finally:
        hook_state.close()
    return [{"agent": f.agent, "event": f.event, "at": f.at, "outcome": f.outcome, "count": f.times} for f in fired]


def _ago(at: float, now: float) -> str:
    seconds = max(0, int(now - at))
    when = datetime.datetime.fromtimestamp(at).strftime("%Y-%m-%d %H:%M:%S")
    for size, unit in ((86400, "d"), (3600, "h"), (60, "min")):
        if seconds >= size:
            return f"{when} ({seconds // size} {unit} ago)"
    return f"{when} ({seconds} s ago)"


def render_status(doc: dict[str, Any]) -> str:
    """The status document as a few readable lines."""
    now = time.time()
    lines = [
        f"scope:   {doc['scope_rule']}; here: {doc['scope_here']}",
        f"server:  {doc['server'] or 'not running (each hook opens the store itself: slower)'}",
        "installed:",
    ]
    uses_http = False
    for item in doc["installed"]:
        hooks_found = item["hooks"]
        if isinstance(hooks_found, str):
            shown = hooks_found
        elif hooks_found:
            uses_http = uses_http or "http" in hooks_found.values()
            shown = ", ".join(f"{name}" + (" (http)" if kind == "http" else "") for name, kind in hooks_found.items())
        else:
            shown = "-"
        lines.append(f"  {item['agent']:<6} {item['level']:<7} {item['path']}: {shown}")
        if item.get("codex_trust"):
            trust = codex_trust_line(item["codex_trust"], codex_config_path())
            lines += [f"         {line}" for line in trust.splitlines()]
        if item.get("codex_trust_error"):
            lines.append(f"         whether Codex trusts them cannot be told: {item['codex_trust_error']}")
    lines.append("mcp server:")
    for item in doc.get("mcp", []):
        lines.append(f"  {item['agent']:<6} {item['level']:<7} {item['path']}: {item['server'] or '-'}")
    lines.append("last fired:" if doc["last_fired"] else "last fired: never")
    for fired in doc["last_fired"]:
        name = EVENTS.get(fired["event"], fired["event"])
        lines.append(
            f"  {fired['agent']:<6} {name:<17} {_ago(fired['at'], now)}  x{fired['count']}  {fired['outcome']}"
        )
    if uses_http and not doc["token_env_set"]:
        lines.append(f"note: http hooks need ${doc['token_env']} set where Claude Code starts (not set here)")
    if doc["log_tail"]:
        lines.append(f"recent problems ({doc['log']}):")
        lines += [f"  {line}" for line in doc["log_tail"]]
    return "\n".join(lines)


@hooks.command("drain", hidden=True)
def drain_command() -> None:
    """Extract queued chunks with the embedded store (started in the background by a hook)."""
    from tap.wiring.hook_service import drain

    drain(state().load())
    sys.exit(0)
