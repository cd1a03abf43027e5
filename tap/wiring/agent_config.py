"""The config a process an agent starts uses (a `tap hook`, `tap mcp`): tap's lookup without the
`./config.toml` of the directory it runs in — an agent starts it in the user's project, whose
`config.toml` is not tap's (tap.locations: the same lookup the hook's light reader makes)."""

from __future__ import annotations

from tap.config import LoadedConfig, load_config


def load_hook_config(explicit: str | None) -> LoadedConfig:
    """The config: `explicit` (--config), else `$TAP_CONFIG`, else the user config folder, else the defaults."""
    return load_config(explicit, project_file=False)
