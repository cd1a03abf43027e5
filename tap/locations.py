"""Where tap's files are: the config file, the data dir, the running server's record, the admin token.

The one copy of these lookups, for tap.config and tap.admin_token and for a `tap hook` process
(bridges.hooks.lightconfig), which must find them before it can afford tap.config's imports: this
module uses the standard library and platformdirs only.

- Config file: `--config PATH`, else `$TAP_CONFIG`, else `./config.toml` (not for a hook, which
  runs in the user's project), else `config.toml` in the user config folder (platformdirs:
  `~/.config/tap` on Linux, honouring `$XDG_CONFIG_HOME`), else none (built-in defaults).
- Data dir: `$TAP_HOME`, else `[data] dir`, else the user data folder (`~/.local/share/tap`).
- A running `tap serve` records itself in `<data dir>/server.json` (url, pid); the admin token is
  the env var `[admin] token_env` names, else `<data dir>/admin-token`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import platformdirs

from tap.errors import ConfigError

APP = "tap"
SERVER_FILE = "server.json"
TOKEN_FILE = "admin-token"


def user_config_file() -> Path:
    """`config.toml` in the platform's user config folder (`~/.config/tap` on Linux)."""
    return platformdirs.user_config_path(APP) / "config.toml"


def default_data_dir() -> Path:
    """The platform's user data folder for tap (`~/.local/share/tap` on Linux)."""
    return platformdirs.user_data_path(APP)


def user_cache_dir() -> Path:
    """The platform's user cache folder for tap (`~/.cache/tap` on Linux)."""
    return platformdirs.user_cache_path(APP)


def find_config_path(explicit: str | Path | None = None, *, project_file: bool = True) -> Path | None:
    """The config file tap reads, by the lookup order above (None: built-in defaults).
    `project_file`: whether `./config.toml` counts (not for a hook). ConfigError for a file named
    (by `--config` or `$TAP_CONFIG`) that does not exist."""
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise ConfigError(f"config file not found: {path}")
        return path
    env = os.environ.get("TAP_CONFIG")
    if env:
        path = Path(env).expanduser()
        if not path.is_file():
            raise ConfigError(f"$TAP_CONFIG points to a missing file: {path}")
        return path
    for candidate in (*([Path("config.toml")] if project_file else []), user_config_file()):
        if candidate.is_file():
            return candidate
    return None


def data_dir(configured: str = "") -> Path:
    """`$TAP_HOME`, else `configured` (`[data] dir`), else the user data folder."""
    env = os.environ.get("TAP_HOME")
    if env:
        return Path(env).expanduser()
    if configured:
        return Path(configured).expanduser()
    return default_data_dir()


def read_secret(env_name: str) -> str | None:
    """The value of the env var a config field names, or None when unset/empty."""
    if not env_name:
        return None
    value = os.environ.get(env_name, "").strip()
    return value or None


def stored_token(data_dir: Path, env_name: str = "") -> str | None:
    """The admin token: the env var `env_name` if set, else the token file (None if neither)."""
    from_env = read_secret(env_name)
    if from_env:
        return from_env
    try:
        return (data_dir / TOKEN_FILE).read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def running_server(data_dir: Path) -> tuple[str, int] | None:
    """(url, pid) of the `tap serve` holding the data dir, if its record exists and its process lives."""
    try:
        info = json.loads((data_dir / SERVER_FILE).read_bytes())
        url, pid = info["url"], int(info["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(url, str) or pid <= 0:
        return None
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return None
    except PermissionError:
        pass
    return url, pid
