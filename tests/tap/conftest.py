"""Fixtures shared by the core's tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tap.config import LoadedConfig, parse_config
from tap.wiring.runtime import Runtime, open_runtime
from testkit.fakes import real_embedder_in_memory


@pytest.fixture
def rt(isolated_home: Path) -> Iterator[Runtime]:
    """The offline default (rules, real embedder, Chroma in memory) on an isolated data dir. A test
    module that needs other adapters defines its own `rt`."""
    runtime = open_runtime(
        LoadedConfig(config=parse_config(""), path=None, data_dir=isolated_home), adapters=real_embedder_in_memory
    )
    yield runtime
    runtime.close()
