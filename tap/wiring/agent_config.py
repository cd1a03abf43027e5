"""The config a process an agent starts uses (a `tap hook`, `tap mcp`): tap's lookup without the
`./config.toml` of the directory it runs in — an agent starts it in the user's project, whose
`config.toml` is not tap's (bridges.hooks.lightconfig finds the path with the standard library)."""

from __future__ import annotations

from bridges.hooks import lightconfig
from tap.config import Config, LoadedConfig, load_config, resolve_data_dir


def load_hook_config(explicit: str | None) -> LoadedConfig:
    """The config: `explicit` (--config), else `$TAP_CONFIG`, else the user config folder, else the defaults."""
    path = lightconfig.find_config_path(explicit)
    if path is not None:
        return load_config(path)
    config = Config()
    return LoadedConfig(config=config, path=None, data_dir=resolve_data_dir(config))
