"""Where tap's files are: the config file, the data dir, the running server's record, the admin token.

The one copy of these lookups, for tap.config and tap.admin_token and for a `tap hook` process
(bridges.hooks.lightconfig), which must find them before it can afford tap.config's imports: this
module uses the standard library and platformdirs only.

- Config file: `--config PATH`, else `$TAP_CONFIG`, else `config.toml` in the user config folder
  (platformdirs: `~/.config/tap` on Linux, honouring `$XDG_CONFIG_HOME`), else `./config.toml` in
  the current directory (not for a hook, which runs in the user's project), else none (built-in
  defaults). The user's own file comes before the current directory's, so running tap inside a
  checkout (whose `config.toml` documents the defaults) never hides the user's settings.
- Data dir: `$TAP_HOME`, else `[data] dir`, else the user data folder (`~/.local/share/tap`).
- A running `tap serve` records itself in `<data dir>/server.json` (url, pid); the admin token is
  the env var `[admin] token_env` names, else `<data dir>/admin-token`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import NamedTuple

from tap.errors import ConfigError

APP = "tap"
SERVER_FILE = "server.json"
TOKEN_FILE = "admin-token"


def user_config_file() -> Path:
    """`config.toml` in the platform's user config folder (`~/.config/tap` on Linux)."""
    import platformdirs  # ~8 ms of imports: a hook whose --config and $TAP_HOME are given never pays them

    return platformdirs.user_config_path(APP) / "config.toml"


def default_data_dir() -> Path:
    """The platform's user data folder for tap (`~/.local/share/tap` on Linux)."""
    import platformdirs

    return platformdirs.user_data_path(APP)


def user_cache_dir() -> Path:
    """The platform's user cache folder for tap (`~/.cache/tap` on Linux)."""
    import platformdirs

    return platformdirs.user_cache_path(APP)


class ConfigLookup(NamedTuple):
    """The outcome of the lookup: the file read (None: built-in defaults), why that one, and the
    files that exist but were passed over, each with why."""

    path: Path | None
    reason: str
    passed_over: tuple[str, ...] = ()


def config_lookup(explicit: str | Path | None = None, *, project_file: bool = True) -> ConfigLookup:
    """Find the config file by the order above (`project_file`: whether `./config.toml` counts).
    ConfigError for a file named by --config or $TAP_CONFIG that does not exist."""
    user, env = user_config_file(), os.environ.get("TAP_CONFIG")
    steps = [  # (the file, if this step has one; what it is; what it says when it has none)
        (_named(explicit, "config file not found") if explicit else None, "given with --config", "no --config"),
        (
            _named(env, "$TAP_CONFIG points to a missing file") if env else None,
            "named by $TAP_CONFIG",
            "no $TAP_CONFIG",
        ),
        (user if user.is_file() else None, "the user config file", f"no {user}"),
    ]
    if project_file:
        steps.append((_local(), "config.toml in the current directory", "no ./config.toml"))
    chosen: tuple[Path, str] | None = None
    absent: list[str] = []  # the steps before the chosen one, that had no file
    passed_over: list[str] = []
    for path, what, missing in steps:
        if path is None:
            if chosen is None:
                absent.append(missing)
        elif chosen is None:
            chosen = (path, what)
        elif path.resolve() != chosen[0].resolve():  # the same file reached twice is no other file
            passed_over.append(f"{path} ({what}): {chosen[1]} comes first")
    if chosen is None:
        return ConfigLookup(path=None, reason="built-in defaults: " + ", ".join(absent))
    reason = f"{chosen[1]}: {', '.join(absent)}" if absent else chosen[1]
    return ConfigLookup(path=chosen[0], reason=reason, passed_over=tuple(passed_over))


def find_config_path(explicit: str | Path | None = None, *, project_file: bool = True) -> Path | None:
    """The config file `config_lookup` finds (None: built-in defaults)."""
    return config_lookup(explicit, project_file=project_file).path


def _local() -> Path | None:
    """`config.toml` in the current directory, as an absolute path (so it still names the file
    from elsewhere, e.g. in the command a hook runs), or None."""
    local = Path("config.toml")
    return local.absolute() if local.is_file() else None


def _named(name: str | Path, missing: str) -> Path:
    """A file the user named (--config, $TAP_CONFIG): it must exist."""
    path = Path(name).expanduser()
    if not path.is_file():
        raise ConfigError(f"{missing}: {path}")
    return path


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
