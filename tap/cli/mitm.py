"""`tap mitm` (run the mitmproxy way in on its own), `tap mitm ca`, and `tap env` (shell lines per way in).

`tap mitm` runs mitmproxy with tap's addon against the same store as `tap serve` (through a running
server, else on the store itself: tap.wiring.mitm_service); options override `[mitm]`. `tap mitm ca` creates
tap's CA if needed and prints where it is and how each client trusts it. `tap env` prints the shell
lines that point clients at tap, for every way in (`--json` for scripts). mitmproxy is imported only
by the commands that run it (it takes seconds) and, once, to create the CA: `tap mitm ca` and
`tap env` import neither it nor the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import click
import msgspec

from tap.admin_token import read_server_info
from tap.cli.options import config_type
from tap.cli.shared import emit_json, state
from tap.config import LoadedConfig, MitmConfig
from tap.errors import ConfigError

if TYPE_CHECKING:
    from bridges.mitm.ca import CaFiles

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")


@click.group("mitm", invoke_without_command=True)
@click.option(
    "--host", type=config_type(MitmConfig, "host"), default=None, help="Listen address (overrides [mitm] host)."
)
@click.option(
    "--port", type=config_type(MitmConfig, "port"), default=None, help="Forward-proxy port (overrides [mitm] port)."
)
@click.option(
    "--reverse",
    "reverse",
    multiple=True,
    metavar="URL@PORT",
    help="A reverse proxy, e.g. https://api.anthropic.com@8082 (repeatable; replaces [mitm] reverse).",
)
@click.option("--regular/--no-regular", default=None, help="Run the forward proxy (overrides [mitm] regular).")
@click.pass_context
def mitm(
    ctx: click.Context, host: str | None, port: int | None, reverse: tuple[str, ...], regular: bool | None
) -> None:
    """Run mitmproxy with tap's memory addon (for clients that cannot change their base URL).

    Regular mode: HTTPS_PROXY=http://127.0.0.1:8080 and trust tap's CA (`tap mitm ca`); only the
    [mitm] hosts are intercepted. Reverse mode (--reverse URL@PORT): plain HTTP to PORT, no CA.
    """
    if ctx.invoked_subcommand is not None:
        return
    from tap.wiring.mitm_service import run_standalone, settings_of  # imports mitmproxy (seconds)

    loaded = _with_overrides(state().load(), host=host, port=port, reverse=reverse, regular=regular)
    run_standalone(loaded, settings_of(loaded))


def _with_overrides(
    loaded: LoadedConfig, *, host: str | None, port: int | None, reverse: tuple[str, ...], regular: bool | None
) -> LoadedConfig:
    """The config with the command line's `[mitm]` overrides (validated like the file)."""
    changes: dict[str, Any] = {}
    if host is not None:
        changes["host"] = host
    if port is not None:
        changes["port"] = port
    if reverse:
        changes["reverse"] = list(reverse)
    if regular is not None:
        changes["regular"] = regular
    try:
        table = msgspec.convert({**msgspec.to_builtins(loaded.config.mitm), **changes}, MitmConfig)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"mitm: {exc}") from None
    return msgspec.structs.replace(loaded, config=msgspec.structs.replace(loaded.config, mitm=table))


@mitm.command("ca")
@json_option
def ca(as_json: bool) -> None:
    """Where tap's CA is (created now if needed) and how each client trusts it."""
    from bridges.mitm.ca import trust_lines

    loaded = state().load()
    files = ca_files(loaded)
    proxy = _regular_url(loaded.config.mitm)
    if as_json:
        emit_json({"cert": str(files.cert), "bundle": str(files.bundle), "created": files.created, "proxy": proxy})
        return
    if files.created:
        click.echo(f"# created tap's CA in {files.confdir}")
    click.echo("\n".join(trust_lines(files, proxy)))


def ca_files(loaded: LoadedConfig) -> CaFiles:
    """tap's mitm CA (created on first use; mitmproxy is imported only then)."""
    from bridges.mitm.ca import confdir_of, ensure_ca

    return ensure_ca(confdir_of(loaded.config.mitm.confdir, loaded.data_dir))


def _regular_url(config: MitmConfig) -> str:
    host = f"[{config.host}]" if ":" in config.host else config.host
    return f"http://{host}:{config.port}"


def reverse_line(url: str, local: str) -> str:
    """The client setting for a reverse proxy to `url` listening at `local` (http://host:port)."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if "anthropic" in host:
        return f"export ANTHROPIC_BASE_URL={local}"
    if "openai" in host:
        return f"export OPENAI_BASE_URL={local}/v1"
    if "ollama" in host or parts.port == 11434:
        return f"export OLLAMA_HOST={local.split('//', 1)[1]}"
    return f"# base URL {local} reaches {url}"


def env_lines(loaded: LoadedConfig) -> dict[str, list[str]]:
    """The shell lines per way in (see docs/ways-in.md)."""
    config = loaded.config
    info = read_server_info(loaded.data_dir)
    host = f"[{config.server.host}]" if ":" in config.server.host else config.server.host
    url = info.url if info is not None else f"http://{host}:{config.server.port}"
    ways: dict[str, list[str]] = {
        "proxy": [
            f"# the proxy (`tap serve`{', running' if info else ''}): base URLs",
            f"export ANTHROPIC_BASE_URL={url}",
            f"export OPENAI_BASE_URL={url}/v1",
            f"export OLLAMA_HOST={url.split('//', 1)[1]}",
        ],
    }
    mitm = config.mitm
    if mitm.regular:
        from bridges.mitm.ca import trust_lines

        ways["mitm"] = ["# mitmproxy, regular mode (`tap mitm`, or [mitm] enabled in `tap serve`)"]
        ways["mitm"] += trust_lines(ca_files(loaded), _regular_url(mitm))
    if mitm.reverse:
        from bridges.mitm.hosts import ReverseTarget

        ways["reverse"] = ["# mitmproxy, reverse mode: one local port per upstream, no CA"]
        mitm_host = f"[{mitm.host}]" if ":" in mitm.host else mitm.host
        for spec in mitm.reverse:
            target = ReverseTarget.parse(spec)
            ways["reverse"].append(reverse_line(target.url, f"http://{mitm_host}:{target.listen_port}"))
    ways["hooks"] = ["# agent hooks (Claude Code, Codex): no environment; run `tap hooks install`"]
    from tap.cli.mcp import manual_lines  # bridges.hooks.install: only for this command

    ways["mcp"] = manual_lines(loaded.path, url, config.admin.token_env or "TAP_ADMIN_TOKEN")
    return ways


@click.command("env")
@click.argument("way", required=False, type=click.Choice(["proxy", "mitm", "reverse", "hooks", "mcp"]))
@json_option
def env(way: str | None, as_json: bool) -> None:
    """Shell lines that point clients at tap, for each way in (or just WAY)."""
    ways = env_lines(state().load())
    if way is not None:
        ways = {way: ways.get(way, [f"# {way}: not configured (see [mitm] in config.toml)"])}
    if as_json:
        emit_json(ways)
        return
    click.echo("\n\n".join("\n".join(lines) for lines in ways.values()))
