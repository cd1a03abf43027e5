"""`tap mcp`: the MCP server over stdio, as an agent starts it (tap.wiring.mcp_stdio; docs/mcp.md).

Its config is found as a hook's is (`--config`, `$TAP_CONFIG`, the user config folder; never a
`./config.toml` of the project the agent runs in). stdout carries the protocol only; logs go to
stderr.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

import click

from tap.cli.shared import state


@click.command("mcp")
@click.option("--scope", default=None, help="The scope the tools use (default: [hooks] scope, else the project).")
def mcp(scope: str | None) -> None:
    """Run tap's MCP server over stdio (what an agent starts; `tap hooks install` registers it)."""
    from tap.wiring.hook_service import load_hook_config
    from tap.wiring.mcp_stdio import serve_stdio, stdio_scope

    loaded = load_hook_config(state().config_path)
    try:
        tap_version = version("tap-memory")
    except PackageNotFoundError:
        tap_version = "0+unknown"
    serve_stdio(loaded, stdio_scope(loaded, scope), tap_version)
