"""Plumbing shared by the CLI modules: the parsed root options, the memory backend, JSON output."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import click
import msgspec

from tap.admin_token import ensure_token, read_server_info
from tap.config import LoadedConfig, load_config


@dataclass
class CliState:
    """What the root group parsed."""

    config_path: str | None

    def load(self) -> LoadedConfig:
        """The validated config (ConfigError propagates to the error handler)."""
        return load_config(self.config_path)


def state() -> CliState:
    """The CliState of the current click context."""
    return click.get_current_context().find_object(CliState) or CliState(None)


@contextlib.contextmanager
def backend() -> Iterator[Any]:
    """The memory operations: through the running server if any, else on the store directly."""
    loaded = state().load()
    info = read_server_info(loaded.data_dir)
    if info is not None:
        from tap.cli.admin_client import AdminClient  # msgspec and tap.records: not for `tap --help`

        yield AdminClient(info.url, ensure_token(loaded.data_dir, loaded.config.admin.token_env))
        return
    from tap.wiring.runtime import runtime  # chromadb and the embedder: only when no server holds the store

    with runtime(loaded) as rt:
        yield rt.memories


def reading[T](ask: Callable[[Any], T]) -> T:
    """`ask(memories)` for a command that only reads: through the running server if any, else from
    the store's read view (tap.wiring.cli_reads: milliseconds), else on the store itself."""
    loaded = state().load()
    info = read_server_info(loaded.data_dir)
    if info is not None:
        from tap.cli.admin_client import AdminClient

        return ask(AdminClient(info.url, ensure_token(loaded.data_dir, loaded.config.admin.token_env)))
    from tap.wiring.cli_reads import read

    return read(loaded, ask)


def emit_json(value: Any) -> None:
    """Print a value as indented JSON on stdout."""
    sys.stdout.write(msgspec.json.format(msgspec.json.encode(value), indent=2).decode() + "\n")
