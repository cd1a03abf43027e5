"""Deprecated-model warnings: read from the installed anthropic SDK's own table."""

from __future__ import annotations

from typing import TYPE_CHECKING

from store.llm.deprecation import deprecated_model_warnings, models_in_use
from tap.config import parse_config
from tests.sdk import sdk

if TYPE_CHECKING:
    import anthropic
else:
    anthropic = sdk("anthropic")


def _deprecated() -> dict[str, str]:
    """The SDK's own table of deprecated models and their end-of-life dates."""
    return dict(anthropic.resources.messages.messages.DEPRECATED_MODELS)


def test_defaults_are_not_deprecated() -> None:
    config = parse_config('[extract]\nprovider = "anthropic"\ngate = "anthropic"\n[telegram]\nenabled = true\n')
    models = [model for _, model in models_in_use(config)]
    assert len(models) == 3
    assert not set(models) & set(_deprecated())
    assert deprecated_model_warnings(config) == []


def test_a_deprecated_model_in_use_gets_one_line_with_its_end_of_life() -> None:
    config = parse_config('[extract]\nprovider = "anthropic"\nmodel = "claude-sonnet-4-5"\n')
    [line] = deprecated_model_warnings(config)
    assert "extract" in line and "'claude-sonnet-4-5'" in line
    assert _deprecated()["claude-sonnet-4-5"] in line
    assert "\n" not in line


def test_models_not_in_use_are_not_reported() -> None:
    config = parse_config('[extract]\nmodel = "claude-sonnet-4-5"\n[telegram]\nmodel = "claude-3-opus-20240229"\n')
    assert models_in_use(config) == []
    assert deprecated_model_warnings(config) == []
