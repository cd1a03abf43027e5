"""The `tap` command line: the root group, `serve`, `config check`, and shared plumbing.

Every command takes `--config PATH`, before or after its name. Errors tap raises on purpose are
printed without a traceback: exit code 2 for configuration errors, 1 for everything else.
Memory commands live in tap.cli_memories; they reach the store through `backend()`, which goes
through a running `tap serve` when there is one (so only one process opens embedded Chroma).

Start-up: every command (and `tap --help`) imports this module and the command modules, so their
top levels import click, msgspec and tap's light core only. chromadb, onnxruntime, aiohttp, rich
and the Telegram library (seconds together) are imported inside the commands that use them;
tests/tap/test_cli_startup.py keeps it that way.
"""

from __future__ import annotations

from typing import Any

import click
import msgspec

from tap import cli_ingest, cli_lifecycle, cli_memories, cli_mitm, cli_ops, cli_telegram
from tap.cli_base import CliState, emit_json, state
from tap.cli_hooks import hook, hooks
from tap.errors import ConfigError, TapError
from tap.render import config_toml


class TapGroup(click.Group):
    """A click group that turns TapError into a one-line message and an exit code."""

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
    help="Config file (default: $TAP_CONFIG, ./config.toml, ~/.config/tap/config.toml).",
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
                "data_dir": str(loaded.data_dir),
                "config": effective,
            }
        )
        return
    source = str(loaded.path) if loaded.path else "built-in defaults (no config file found)"
    click.echo(f"# config: {source}\n# data dir: {loaded.data_dir}\n# OK: the configuration is valid\n")
    click.echo(config_toml(effective))


@main.command("serve")
@click.option("--host", default=None, help="Override [server] host.")
@click.option("--port", type=int, default=None, help="Override [server] port.")
def serve(host: str | None, port: int | None) -> None:
    """Run the proxy, the admin API and the background workers on one port."""
    from tap.server import run_server  # aiohttp, the store, the embedder: seconds to import

    run_server(state().load(), host=host, port=port)


main.add_command(cli_memories.memories)
main.add_command(cli_memories.recall)
main.add_command(cli_lifecycle.why)
main.add_command(cli_ops.status)
main.add_command(cli_ops.extract)
main.add_command(cli_ingest.ingest)
main.add_command(cli_telegram.telegram)
main.add_command(hook)
main.add_command(hooks)
main.add_command(cli_mitm.mitm)
main.add_command(cli_mitm.env)


def _late_config(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None:
        cli_state = ctx.find_object(CliState)
        if cli_state is not None:
            cli_state.config_path = value


def _accept_config_anywhere(group: click.Group) -> None:
    """Give every subcommand a `--config` too, so it may follow the command (`tap status --config F`);
    given twice, the later one counts."""
    for command in group.commands.values():
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
            _accept_config_anywhere(command)


_accept_config_anywhere(main)
