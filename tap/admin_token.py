"""The admin API bearer token and the running server's address, both kept in the data dir.

The token is created on first use with mode 0600 (`<data_dir>/admin-token`, the data dir 0700:
tap.datadir); an env var named in `[admin] token_env` overrides it. `tap serve` writes
`<data_dir>/server.json` (url, pid) while it runs, so CLI commands can go through it instead of
opening the store a second time. Both are read by tap.locations (a hook process reads them too).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import msgspec

from tap.datadir import make_private
from tap.errors import ConfigError
from tap.locations import SERVER_FILE, TOKEN_FILE, running_server, stored_token


class ServerInfo(msgspec.Struct, kw_only=True):
    """Where a running `tap serve` listens."""

    url: str
    pid: int


def ensure_token(data_dir: Path, env_name: str = "") -> str:
    """The admin token: from the env var if set, else the token file (created if missing)."""
    found = stored_token(data_dir, env_name)
    if found:
        return found
    if (data_dir / TOKEN_FILE).exists():
        raise ConfigError(f"the admin token file {data_dir / TOKEN_FILE} is empty: delete it, and tap makes a new one")
    make_private(data_dir)
    token = secrets.token_urlsafe(32)
    fd = os.open(data_dir / TOKEN_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(token + "\n")
    return token


def write_server_info(data_dir: Path, info: ServerInfo) -> None:
    """Record the running server (atomically)."""
    tmp = data_dir / f"{SERVER_FILE}.tmp"
    tmp.write_bytes(msgspec.json.encode(info))
    tmp.replace(data_dir / SERVER_FILE)


def read_server_info(data_dir: Path) -> ServerInfo | None:
    """The running server, if its record exists and its process is alive."""
    found = running_server(data_dir)
    return None if found is None else ServerInfo(url=found[0], pid=found[1])


def clear_server_info(data_dir: Path) -> None:
    """Forget the server record (on shutdown)."""
    (data_dir / SERVER_FILE).unlink(missing_ok=True)
