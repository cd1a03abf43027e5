"""The `tap` command line: the root group, `serve`, `config check`, and shared plumbing.

Every command takes `--config PATH`, before or after its name. Errors tap raises on purpose are
printed without a traceback: exit code 2 for configuration errors, 1 for everything else.
Memory commands live in tap.cli.memories; they reach the store through `backend()`, which goes
through a running `tap serve` when there is one (so only one process opens embedded Chroma).

Start-up: every command (and `tap --help`) imports this module and the command modules, so their
top levels import click, msgspec and tap's light core only. chromadb, onnxruntime, aiohttp, rich
and the Telegram library (seconds together) are imported inside the commands that use them;
tests/tap/cli/test_cli_startup.py keeps it that way.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import click
import msgspec

from tap.cli import lifecycle, memories, ops  # lifecycle adds memory subcommands
from tap.cli.options import config_type
from tap.cli.render import config_toml
from tap.cli.shared import CliState, emit_json, state
from tap.config import ServerConfig, default_config_text, user_config_file
from tap.errors import ConfigError, TapError

# Commands whose modules load only when the command runs (or its own --help): their imports
# (bridges.logtail, bridges.hooks, mitmproxy's helpers) cost start-up time that `tap status`,
# `tap recall` and `tap memories list` should not pay. name → ("module:attribute", first help paragraph
# as `tap --help` lists it; tests/tap/cli/test_cli_startup.py checks it against the command's own).
LAZY_COMMANDS: dict[str, tuple[str, str]] = {
    "env": ("tap.cli.mitm:env", "Shell lines that point clients at tap, for each way in (or just WAY)."),
    "hook": (
        "tap.cli.hooks:hook",
        "Handle one agent hook event: hook JSON on stdin, hook output on stdout, always exit 0.",
    ),
    "hooks": ("tap.cli.hooks:hooks", "Install, remove and inspect tap's Claude Code and Codex hooks."),
    "ingest": (
        "tap.cli.ingest:ingest",
        "Ingest chat logs (Claude Code transcripts, JSONL, plain text) into memories, exactly once.",
    ),
    "mcp": (
        "tap.cli.mcp:mcp",
        "Run tap's MCP server over stdio (what an agent starts; `tap hooks install` registers it).",
    ),
    "mitm": (
        "tap.cli.mitm:mitm",
        "Run mitmproxy with tap's memory addon (for clients that cannot change their base URL).",
    ),
    "telegram": (
        "tap.cli.telegram:telegram",
        "Manage the Telegram bot's webhook (the bot itself runs inside `tap serve`).",
    ),
}


class TapGroup(click.Group):
    """A click group that turns TapError into a one-line message and an exit code, and loads the
    LAZY_COMMANDS when they are called."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in LAZY_COMMANDS:
            module, _, attribute = LAZY_COMMANDS[cmd_name][0].partition(":")
            command = getattr(importlib.import_module(module), attribute)
            _accept_config(command)
            self.add_command(command, cmd_name)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list of `tap --help`, without loading the lazy commands for their help."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            command = self.commands.get(name)
            if command is None:
                stand_in = click.Command(name, help=LAZY_COMMANDS[name][1])  # shortened as click does
                rows.append((name, stand_in.get_short_help_str(limit)))
            elif not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ConfigError as exc:
            click.echo(f"tap: config error: {exc}", err=True)
            ctx.exit(2)
        except TapError as exc:
            click.echo(f"tap: {exc}", err=True)
            ctx.exit(1)


@click.group(cls=TapGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    envvar=None,
    help="Config file (default: $TAP_CONFIG, else the user config folder's config.toml, else ./config.toml).",
)
@click.version_option(package_name="tap-memory", prog_name="tap")
@click.pass_context
def main(ctx: click.Context, config_path: str | None) -> None:
    """tap: automatic long-term memory for any LLM chat."""
    ctx.obj = CliState(config_path)


@main.group("config")
def config_group() -> None:
    """Inspect the configuration."""


@config_group.command("check")
@click.option("--json", "as_json", is_flag=True, help="Print the effective config as JSON.")
def config_check(as_json: bool) -> None:
    """Validate the config file and print the effective configuration (exit 2 when invalid)."""
    loaded = state().load()
    effective = msgspec.to_builtins(loaded.config)
    if as_json:
        emit_json(
            {
                "path": str(loaded.path) if loaded.path else None,
                "reason": loaded.reason,
                "passed_over": list(loaded.passed_over),
                "data_dir": str(loaded.data_dir),
                "config": effective,
            }
        )
        return
    source = str(loaded.path) if loaded.path else "built-in defaults (no config file found)"
    lines = [f"# config: {source}", f"# why: {loaded.reason}"]
    lines += [f"# passed over: {skipped}" for skipped in loaded.passed_over]
    lines += [f"# data dir: {loaded.data_dir}", "# OK: the configuration is valid", ""]
    click.echo("\n".join(lines))
    click.echo(config_toml(effective))


@config_group.command("init")
@click.argument("path", required=False, type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--force", is_flag=True, help="Replace a file that is already there.")
def config_init(path: str | None, force: bool) -> None:
    """Write the documented default config (every option, commented) to PATH, else to the user
    config file, where tap looks first after --config and $TAP_CONFIG; `-` prints it."""
    text = default_config_text()
    if path == "-":
        click.echo(text, nl=False)
        return
    target = Path(path).expanduser() if path else user_config_file()
    if target.exists() and not force:
        raise TapError(f"{target} exists; edit it, or run again with --force to replace it")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    click.echo(f"wrote {target}; `tap config check` validates it")


@main.command("serve")
@click.option("--host", type=config_type(ServerConfig, "host"), default=None, help="Override [server] host.")
@click.option(
    "--port",
    type=config_type(ServerConfig, "port"),
    default=None,
    help="Override [server] port (0: any free port, written to <data dir>/server.json).",
)
def serve(host: str | None, port: int | None) -> None:
    """Run the proxy, the admin API and the background workers on one port."""
    from tap.wiring.server import run_server  # aiohttp, the store, the embedder: seconds to import

    run_server(state().load(), host=host, port=port)


main.add_command(memories.memories)
main.add_command(memories.recall)
main.add_command(lifecycle.why)
main.add_command(ops.status)
main.add_command(ops.ui)
main.add_command(ops.extract)


def _late_config(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None:
        cli_state = ctx.find_object(CliState)
        if cli_state is not None:
            cli_state.config_path = value


def _accept_config(command: click.Command) -> None:
    """Give the command (and its subcommands) a `--config` too, so it may follow the command (`tap
    status --config F`); given twice, the later one counts."""
    command.params.append(
        click.Option(
            ["--config"],
            type=click.Path(dir_okay=False),
            expose_value=False,
            callback=_late_config,
            help="Config file (the same as `tap --config`).",
        )
    )
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            _accept_config(sub)


for _command in main.commands.values():
    _accept_config(_command)
