"""Warnings for configured Claude models that the installed anthropic SDK lists as deprecated.

The SDK keeps a table of deprecated model ids with their end-of-life dates
(`anthropic.resources.messages.messages.DEPRECATED_MODELS`); a model past that date stops
answering, which would silently stop extraction or the Telegram bridge. `tap serve` prints one
line per deprecated model that is actually in use (an Anthropic extractor or gate, or the
Telegram bridge on Anthropic). The SDK is imported only when some Anthropic model is in use: it
takes seconds to import, and the offline default needs none of it.

Invariants: never raises (an SDK without the table, or a renamed module, gives no warnings).
"""

from __future__ import annotations

import importlib

from tap.config import Config

__all__ = ["deprecated_model_warnings", "models_in_use", "sdk_deprecation_table"]


def models_in_use(config: Config) -> list[tuple[str, str]]:
    """(config key, model id) of every Anthropic model the configuration will call."""
    used: list[tuple[str, str]] = []
    ex = config.extract
    if ex.provider == "anthropic":
        used.append(("extract.model", ex.model))
    if ex.gate == "anthropic":
        used.append(("extract.gate_model", ex.gate_model))
    if config.telegram.enabled and config.telegram.provider == "anthropic":
        used.append(("telegram.model", config.telegram.model))
    return used


def sdk_deprecation_table() -> dict[str, str]:
    """The installed SDK's table of deprecated model ids and their end-of-life dates ({} if none)."""
    try:
        module = importlib.import_module("anthropic.resources.messages.messages")
    except Exception:  # no SDK, or its layout changed: nothing to say
        return {}
    table = getattr(module, "DEPRECATED_MODELS", {})
    return {str(k): str(v) for k, v in table.items()} if isinstance(table, dict) else {}


def deprecated_model_warnings(config: Config, table: dict[str, str] | None = None) -> list[str]:
    """One line per configured, in-use model that the SDK lists as deprecated."""
    used = models_in_use(config)
    if not used:
        return []
    known = sdk_deprecation_table() if table is None else table
    return [
        f"WARNING: [{key.split('.')[0]}] {key.split('.')[1]} = {model!r} is deprecated by Anthropic"
        f" (end of life {known[model]}); set a current model such as 'claude-sonnet-4-6'"
        for key, model in used
        if model in known
    ]
