"""Shared fixtures: every test runs with its own TAP_HOME and no config file from the machine: the
user config folder ($XDG_CONFIG_HOME) is an empty folder of the test's own, and $TAP_CONFIG unset.

Every test also runs with SSL_CERT_FILE naming a one-certificate trust store (`loopback_trust`):
tests only speak to loopback servers, and an HTTP client (httpx under the Anthropic, OpenAI and
Ollama SDKs) otherwise loads the ~150 public roots for each client it builds, ~30 ms each, several
hundred times a run. Tests of TLS set SSL_CERT_FILE themselves.

Adapters: `hash_embedder` and `memory_store` are the fast fakes (testkit/fakes.py); `embedder` is the
real ONNX embedder (loaded once) and `store` a real ChromaStore, embedded and (marked slow: it
starts a `chroma run` process) on a Chroma server.

The real embedder's model runs once per distinct input in a test process (`onnx_runs_once`): about
half of the fast loop's model runs were the same texts again in later tests (the model is
deterministic: a text's vector is the same every run). The embedder's own tests
(`ONNX_OWN_TESTS`) run the model every time.
"""

from __future__ import annotations

import datetime
import itertools
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="session")
def loopback_trust(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A trust store holding one throwaway self-signed certificate (that nothing serves)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "tap tests trust no public root")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    path = tmp_path_factory.mktemp("trust") / "loopback-only.pem"
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loopback_trust: Path) -> Iterator[Path]:
    """Point TAP_HOME and the user config folder at fresh folders and run from the test's own
    folder, so no real state and no developer's config is touched (HOME stays: the derived model
    is cached under it)."""
    home = tmp_path / "taphome"
    home.mkdir()
    monkeypatch.setenv("TAP_HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("SSL_CERT_FILE", str(loopback_trust))
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    monkeypatch.delenv("TAP_CONFIG", raising=False)
    monkeypatch.setenv("ORT_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("ANONYMIZED_TELEMETRY", "False")
    monkeypatch.chdir(tmp_path)
    yield home


ONNX_OWN_TESTS = frozenset({"test_onnx_embedder.py", "test_embedder_contract.py"})
_onnx_vectors: dict[tuple[tuple[int, ...], ...], Any] = {}  # token ids of a run's texts -> its unit vectors


@pytest.fixture(autouse=True)
def onnx_runs_once(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the ONNX embedder's module is loaded in this process, its model run (`_run`: padded token
    ids in, unit vectors out) is computed once per distinct input and kept; every other step of an
    embedding (tokenizing, the sessions' lock, the batch threads) still runs. Not for the
    embedder's own tests, which hold the model to its outputs (nor before the module is loaded)."""
    module = sys.modules.get("store.onnx_embedder")
    if module is None or request.path.name in ONNX_OWN_TESTS:
        return
    run: Callable[[Any, Any], Any] = module._run

    def run_once(session: Any, encodings: Any) -> Any:
        key = tuple(tuple(encoding.ids) for encoding in encodings)
        vectors = _onnx_vectors.get(key)
        if vectors is None:
            vectors = _onnx_vectors[key] = run(session, encodings)
        return vectors.copy()

    monkeypatch.setattr(module, "_run", run_once)


@pytest.fixture(scope="session")
def embedder() -> Any:
    """The real embedded ONNX embedder, loaded once per test session."""
    from store.onnx_embedder import OnnxMiniLMEmbedder

    return OnnxMiniLMEmbedder()


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A real `chroma run` server on loopback for the whole session."""
    from testkit.chroma_server import ChromaServer

    server = ChromaServer(tmp_path_factory.mktemp("chroma-server"))
    server.start()
    yield server
    server.stop()


_collections = itertools.count()


@pytest.fixture
def hash_embedder() -> Any:
    """The deterministic hashing embedder (no model loaded)."""
    from testkit.fakes import HashEmbedder

    return HashEmbedder()


@pytest.fixture
def memory_store(hash_embedder: Any) -> Any:
    """An empty InMemoryStore for the hashing embedder."""
    from testkit.fakes import InMemoryStore

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


SDK_GROUP = "sdk"


@pytest.hookimpl(wrapper=True)  # a wrapper's first half runs before xdist reads the marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> Iterator[None]:
    """Every test of a module that uses an LLM SDK (tests/sdk.py), or that says so with
    `pytestmark = pytest.mark.xdist_group("sdk")`, joins one xdist group: `./dev test-fast`
    (`--dist loadgroup`) runs the group on one worker, so only that worker imports the SDKs."""
    from tests.sdk import uses_sdk

    for item in items:
        module = getattr(item, "module", None)
        if module is not None and uses_sdk(module) and not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(SDK_GROUP))
    yield
