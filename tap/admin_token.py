"""The admin API bearer token and the running server's address, both kept in the data dir.

The token is created on first use with mode 0600 (`<data_dir>/admin-token`, the data dir 0700:
tap.datadir); an env var named
in `[admin] token_env` overrides it. `tap serve` writes `<data_dir>/server.json` (url, pid) while
it runs, so CLI commands can go through it instead of opening the store a second time.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import msgspec

from tap.config import read_secret
from tap.datadir import make_private


class ServerInfo(msgspec.Struct, kw_only=True):
    """Where a running `tap serve` listens."""

    url: str
    pid: int


def ensure_token(data_dir: Path, env_name: str = "") -> str:
    """The admin token: from the env var if set, else the token file (created if missing)."""
    from_env = read_secret(env_name)
    if from_env:
        return from_env
    path = data_dir / "admin-token"
    if path.exists():
        return path.read_text(encoding="utf-8").strip()
    make_private(data_dir)
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(token + "\n")
    return token


def write_server_info(data_dir: Path, info: ServerInfo) -> None:
    """Record the running server (atomically)."""
    tmp = data_dir / "server.json.tmp"
    tmp.write_bytes(msgspec.json.encode(info))
    tmp.replace(data_dir / "server.json")


def read_server_info(data_dir: Path) -> ServerInfo | None:
    """The running server, if its record exists and its process is alive."""
    try:
        info = msgspec.json.decode((data_dir / "server.json").read_bytes(), type=ServerInfo)
    except (OSError, msgspec.DecodeError):
        return None
    try:
        os.kill(info.pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return info


def clear_server_info(data_dir: Path) -> None:
    """Forget the server record (on shutdown)."""
    (data_dir / "server.json").unlink(missing_ok=True)
