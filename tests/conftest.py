"""Shared fixtures: every test runs with its own TAP_HOME and no config file from the machine.

Adapters: `hash_embedder` and `memory_store` are the fast fakes (tests/fakes.py); `embedder` is the
real ONNX embedder (loaded once) and `store` a real ChromaStore, embedded and (marked slow: it
starts a `chroma run` process) on a Chroma server.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Point TAP_HOME at a fresh folder and run from it, so no real state is touched."""
    home = tmp_path / "taphome"
    home.mkdir()
    monkeypatch.setenv("TAP_HOME", str(home))
    monkeypatch.delenv("TAP_CONFIG", raising=False)
    monkeypatch.setenv("ORT_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("ANONYMIZED_TELEMETRY", "False")
    monkeypatch.chdir(tmp_path)
    yield home


@pytest.fixture(scope="session")
def embedder() -> Any:
    """The real embedded ONNX embedder, loaded once per test session."""
    from store.onnx_embedder import OnnxMiniLMEmbedder

    return OnnxMiniLMEmbedder()


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A real `chroma run` server on loopback for the whole session."""
    from tests.chroma_server import ChromaServer

    server = ChromaServer(tmp_path_factory.mktemp("chroma-server"))
    server.start()
    yield server
    server.stop()


_collections = itertools.count()


@pytest.fixture
def hash_embedder() -> Any:
    """The deterministic hashing embedder (no model loaded)."""
    from tests.fakes import HashEmbedder

    return HashEmbedder()


@pytest.fixture
def memory_store(hash_embedder: Any) -> Any:
    """An empty InMemoryStore for the hashing embedder."""
    from tests.fakes import InMemoryStore

    return InMemoryStore(embedder_id=hash_embedder.model_id)


@pytest.fixture(params=["embedded", pytest.param("server", marks=pytest.mark.slow)])
def store(request: pytest.FixtureRequest, isolated_home: Path, embedder: Any) -> Iterator[Any]:
    """A ChromaStore on embedded Chroma and on a real Chroma server (one fresh collection each)."""
    from store.chroma import ChromaStore

    url = request.getfixturevalue("chroma_server").url if request.param == "server" else ""
    opened = ChromaStore(
        data_dir=isolated_home,
        url=url,
        collection=f"test-{next(_collections)}-{os.getpid()}",
        embedder_id=embedder.model_id,
        dimensions=embedder.dimensions,
    )
    yield opened
    opened.close()
