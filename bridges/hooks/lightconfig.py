"""What a hook process needs to know before it decides where to go, read without msgspec.

A `tap hook` process that finds a running `tap serve` must start fast (bridges.hooks), so it does
not import tap.config (msgspec alone costs more than the rest of the process). This module
repeats, with the standard library and platformdirs, the few lookups it needs, in the same order as
tap.config and tap.admin_token (a test checks that they agree):
- the config file: `--config PATH`, else `$TAP_CONFIG`, else `config.toml` in the user config
  folder (`~/.config/tap` on Linux), else none (built-in defaults). Unlike the CLI, a hook never
  reads `./config.toml`: it runs in the agent's working directory, the user's project, whose
  `config.toml` is not tap's (that is why `tap hooks install` writes `--config PATH` into the
  command when tap was set up with one);
- the data dir: `$TAP_HOME`, else `[data] dir`, else the user data folder (`~/.local/share/tap`);
- `[hooks] timeout_s` / `embedded_timeout_s` and `[admin] token_env` (defaults as in tap.config);
- the running server (`<data dir>/server.json`, its pid alive) and the admin token (the env var
  `[admin] token_env` names, else `<data dir>/admin-token`).

The user folders are found as platformdirs finds them (on Linux by the same XDG rule, written out
here: platformdirs' imports cost as much as the rest of the process; elsewhere with platformdirs).

Values are not validated here beyond their type (a wrong type falls back to the default); the
server and `tap config check` validate the whole file. Errors reading the file raise
`LightConfigError`, which the hook turns into a log line.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, NamedTuple

APP = "tap"
DEFAULT_TIMEOUT_S = 1.0
DEFAULT_EMBEDDED_TIMEOUT_S = 10.0
DEFAULT_TOKEN_ENV = "TAP_ADMIN_TOKEN"


class LightConfigError(Exception):
    """The config file named cannot be found or read."""


class LightConfig(NamedTuple):
    """The settings a hook process reads before anything else (a NamedTuple: `dataclasses` costs
    ~10 ms of imports)."""

    path: Path | None
    data_dir: Path
    timeout_s: float = DEFAULT_TIMEOUT_S
    embedded_timeout_s: float = DEFAULT_EMBEDDED_TIMEOUT_S
    token_env: str = DEFAULT_TOKEN_ENV


def find_config_path(explicit: str | None = None) -> Path | None:
    """The config file by tap's lookup order without `./config.toml` (None: built-in defaults)."""
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise LightConfigError(f"config file not found: {path}")
        return path
    env = os.environ.get("TAP_CONFIG")
    if env:
        path = Path(env).expanduser()
        if not path.is_file():
            raise LightConfigError(f"$TAP_CONFIG points to a missing file: {path}")
        return path
    user = _user_dir("XDG_CONFIG_HOME", ".config", "user_config_path") / "config.toml"
    return user if user.is_file() else None


def _table(data: dict[str, Any], name: str) -> dict[str, Any]:
    value = data.get(name)
    return value if isinstance(value, dict) else {}


def _positive(table: dict[str, Any], key: str, default: float) -> float:
    value = table.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return default
    return float(value)


def load(explicit: str | None = None) -> LightConfig:
    """Read the config file (if any) for the hook process's settings."""
    path = find_config_path(explicit)
    data: dict[str, Any] = {}
    if path is not None:
        import tomllib  # only when there is a file to read

        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise LightConfigError(f"cannot read config file {path}: {exc}") from exc
    hooks, admin, data_table = _table(data, "hooks"), _table(data, "admin"), _table(data, "data")
    token_env = admin.get("token_env", DEFAULT_TOKEN_ENV)
    return LightConfig(
        path=path,
        data_dir=data_dir(data_table.get("dir")),
        timeout_s=_positive(hooks, "timeout_s", DEFAULT_TIMEOUT_S),
        embedded_timeout_s=_positive(hooks, "embedded_timeout_s", DEFAULT_EMBEDDED_TIMEOUT_S),
        token_env=token_env if isinstance(token_env, str) else DEFAULT_TOKEN_ENV,
    )


def data_dir(configured: object = None) -> Path:
    """`$TAP_HOME`, else `[data] dir`, else the user data folder (platformdirs, as tap.config)."""
    env = os.environ.get("TAP_HOME")
    if env:
        return Path(env).expanduser()
    if isinstance(configured, str) and configured:
        return Path(configured).expanduser()
    return _user_dir("XDG_DATA_HOME", ".local/share", "user_data_path")


def _user_dir(xdg_variable: str, home_relative: str, platformdirs_name: str) -> Path:
    """tap's user folder of one kind: on Linux the XDG rule platformdirs follows (the variable when
    it is an absolute path, else the folder under $HOME), elsewhere platformdirs itself, whose
    imports cost as much as the rest of the hook process."""
    if sys.platform == "linux":
        value = os.environ.get(xdg_variable, "")
        base = Path(value) if os.path.isabs(value) else Path.home() / home_relative
        return base / APP
    import platformdirs

    found: Path = getattr(platformdirs, platformdirs_name)(APP)
    return found


def running_server(config: LightConfig) -> str | None:
    """The URL of the `tap serve` holding the data dir, if its record exists and its process lives."""
    try:
        info = json.loads((config.data_dir / "server.json").read_bytes())
        url, pid = info["url"], int(info["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return url if isinstance(url, str) else None


def admin_token(config: LightConfig) -> str | None:
    """The admin token: the env var `[admin] token_env` names, else the token file (None if neither)."""
    if config.token_env:
        value = os.environ.get(config.token_env, "").strip()
        if value:
            return value
    try:
        return (config.data_dir / "admin-token").read_text(encoding="utf-8").strip() or None
    except OSError:
        return None
