"""The settings a `tap hook` process reads before it decides where to go, without tap.config's imports.

A hook process that finds a running `tap serve` must start fast (bridges.hooks), and tap.config
(msgspec) costs about as much as the rest of the process. So:
- its files are found by tap.locations, the lookups tap.config uses, except that a hook never
  reads `./config.toml`: it runs in the agent's working directory, the user's project, whose
  `config.toml` is not tap's (`tap hooks install` writes `--config PATH` into the command when tap
  was set up with one);
- the config is validated by tap.config itself (`read_config`, the one validation), once per
  version of the file: the few settings a hook needs from the validated config are kept in
  `<data dir>/hook-settings.json`, keyed by the file (path, size, modification time, inode) and
  by tap.config's own source, and read from there while neither changes (`tap serve` leaves them
  there for its own config at start). A file that does not validate raises ConfigError with
  tap.config's message, every time (the hook logs it and fails open).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from tap import locations
from tap.errors import ConfigError

if TYPE_CHECKING:
    from tap.config import Config

SETTINGS_FILE = "hook-settings.json"
_CONFIG_SOURCE = Path(locations.__file__).with_name("config.py")


class LightConfig(NamedTuple):
    """The settings a hook process reads before anything else (a NamedTuple: `dataclasses` would
    add imports to the hook's start)."""

    path: Path | None
    data_dir: Path
    timeout_s: float
    embedded_timeout_s: float
    token_env: str


def load(explicit: str | None = None) -> LightConfig:
    """The hook's settings from the config file tap's lookup finds (`explicit`: `--config`)."""
    path = locations.find_config_path(explicit, project_file=False)
    text = _read(path)
    named = _data_dir_named(text)
    key = _stamp(path)
    settings = _remembered(locations.data_dir(named), key)
    if settings is None:
        settings = _validated(path)
        if settings["data_dir"] == named:  # the file where the next hook looks for it
            _remember(locations.data_dir(named), key, settings)
    return LightConfig(
        path=path,
        data_dir=locations.data_dir(settings["data_dir"]),
        timeout_s=settings["timeout_s"],
        embedded_timeout_s=settings["embedded_timeout_s"],
        token_env=settings["token_env"],
    )


def running_server(config: LightConfig) -> str | None:
    """The URL of the `tap serve` holding the data dir, if its record exists and its process lives."""
    found = locations.running_server(config.data_dir)
    return None if found is None else found[0]


def admin_token(config: LightConfig) -> str | None:
    """The admin token: the env var `[admin] token_env` names, else the token file (None if neither)."""
    return locations.stored_token(config.data_dir, config.token_env)


def _read(path: Path | None) -> str:
    if path is None:
        return ""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from exc


def _data_dir_named(text: str) -> str:
    """`[data] dir` as the file says it, only to know where the remembered settings are ("" when
    absent or unreadable: validation then has the last word)."""
    if "dir" not in text:
        return ""
    import tomllib  # only when there is a file that may name a data dir

    try:
        value = tomllib.loads(text).get("data", {}).get("dir", "")
    except (tomllib.TOMLDecodeError, AttributeError):
        return ""
    return value if isinstance(value, str) else ""


def _stamp(path: Path | None) -> list[Any]:
    """What identifies this version of the config file and of tap.config's rules."""
    source = _CONFIG_SOURCE.stat()
    rules = [source.st_size, source.st_mtime_ns]
    if path is None:
        return [None, *rules]
    found = path.stat()
    return [str(path.resolve()), found.st_size, found.st_mtime_ns, found.st_ino, *rules]


def remember_validated(path: Path | None, config: Config) -> None:
    """Keep the hook's settings of a config tap has just validated (`tap serve` at start), so the
    first hook with that file need not validate it again."""
    named = _data_dir_named(_read(path))
    settings = _settings_of(config)
    if settings["data_dir"] == named:
        _remember(locations.data_dir(named), _stamp(path), settings)


def _validated(path: Path | None) -> dict[str, Any]:
    """The settings a hook needs, from the config tap.config reads and validates (its imports: only here)."""
    from tap.config import Config, read_config

    return _settings_of(Config() if path is None else read_config(path))


def _settings_of(config: Config) -> dict[str, Any]:
    return {
        "data_dir": config.data.dir,
        "timeout_s": config.hooks.timeout_s,
        "embedded_timeout_s": config.hooks.embedded_timeout_s,
        "token_env": config.admin.token_env,
    }


def _remembered(data_dir: Path, key: list[Any]) -> dict[str, Any] | None:
    try:
        found = json.loads((data_dir / SETTINGS_FILE).read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(found, dict) or found.get("key") != key or not isinstance(found.get("settings"), dict):
        return None
    settings: dict[str, Any] = found["settings"]
    return settings


def _remember(data_dir: Path, key: list[Any], settings: dict[str, Any]) -> None:
    """Keep the validated settings for the next hook (atomically; not at all where the data dir
    does not exist yet or cannot be written: the next hook validates again)."""
    if not data_dir.is_dir():
        return
    tmp = data_dir / f"{SETTINGS_FILE}.{os.getpid()}.tmp"
    try:
        tmp.write_text(json.dumps({"key": key, "settings": settings}), encoding="utf-8")
        tmp.replace(data_dir / SETTINGS_FILE)
    except OSError:
        tmp.unlink(missing_ok=True)
