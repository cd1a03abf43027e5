"""Deprecated-model warnings: which configured models are in use, and one line for each that a
deprecation table lists. The tests pass their own table: the installed SDK's table changes with
its version, so of the real one only its shape is checked."""

from __future__ import annotations

from typing import TYPE_CHECKING

from store.llm.deprecation import deprecated_model_warnings, models_in_use, sdk_deprecation_table
from tap.config import parse_config
from tests.sdk import sdk

if TYPE_CHECKING:
    import anthropic
else:
    anthropic = sdk("anthropic")

TABLE = {"claude-old-1": "2026-01-05", "claude-older-0": "2025-06-30"}


def test_defaults_are_not_deprecated_by_the_locked_sdk() -> None:
    config = parse_config('[extract]\nprovider = "anthropic"\ngate = "anthropic"\n[telegram]\nenabled = true\n')
    models = [model for _, model in models_in_use(config)]
    assert len(models) == 3
    assert not set(models) & set(sdk_deprecation_table())
    assert deprecated_model_warnings(config) == []


def test_a_deprecated_model_in_use_gets_one_line_with_its_end_of_life() -> None:
    config = parse_config('[extract]\nprovider = "anthropic"\nmodel = "claude-old-1"\n')
    [line] = deprecated_model_warnings(config, TABLE)
    assert "extract" in line and "'claude-old-1'" in line
    assert "2026-01-05" in line
    assert "\n" not in line


def test_every_deprecated_model_in_use_is_named_once() -> None:
    config = parse_config(
        '[extract]\nprovider = "anthropic"\nmodel = "claude-old-1"\ngate = "anthropic"\n'
        'gate_model = "claude-older-0"\n[telegram]\nenabled = true\nmodel = "claude-old-1"\n'
    )
    lines = deprecated_model_warnings(config, TABLE)
    assert [line.split("]")[0] for line in lines] == ["WARNING: [extract", "WARNING: [extract", "WARNING: [telegram"]
    assert "2025-06-30" in lines[1]


def test_models_not_in_use_are_not_reported() -> None:
    config = parse_config('[extract]\nmodel = "claude-old-1"\n[telegram]\nmodel = "claude-older-0"\n')
    assert models_in_use(config) == []
    assert deprecated_model_warnings(config, TABLE) == []


def test_the_sdk_table_is_read_as_model_ids_and_dates() -> None:
    """Only the shape: the installed SDK has a table of model id -> end-of-life date."""
    raw = anthropic.resources.messages.messages.DEPRECATED_MODELS
    table = sdk_deprecation_table()
    assert table == {str(k): str(v) for k, v in raw.items()}
    assert all(model.startswith("claude-") and date.strip() for model, date in table.items())
