"""The derived int8 model: built once into the cache, verified at load, rebuilt when damaged."""

from __future__ import annotations

import collections
import logging
import shutil
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from store.onnx_embedder import MODEL_SHA256, _load_tokenizer, _pad, _pool, default_model_path
from store.onnx_quantize import CACHE_ENV, cache_dir, quantized_model

TEXTS = [
    "I moved to Lisbon last month.",
    "Let's use Postgres for the billing service.",
    "My sister Ana works as a nurse in Porto and visits every summer.",
    "What's the weather like tomorrow?",
]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("models")
    model = quantized_model(default_model_path(), MODEL_SHA256, directory)
    assert model.path is not None and model.path.parent == directory
    return model.path


def vectors(source: str | bytes) -> np.ndarray:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
    ids, mask = _pad(_load_tokenizer().encode_batch(TEXTS))
    hidden = session.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": 0 * ids})
    return _pool(hidden[0], mask)


@pytest.mark.slow  # quantizes the model (seconds of CPU)
def test_matmuls_run_on_int8_activations(built: Path) -> None:
    ops = collections.Counter(node.op_type for node in onnx.load(str(built)).graph.node)
    assert ops["MatMulInteger"] >= 36  # 6 layers x (q, k, v, out, up, down)
    assert ops["DynamicQuantizeLinear"] > 0


@pytest.mark.slow  # quantizes the model (seconds of CPU)
def test_vectors_agree_with_the_shipped_model(built: Path) -> None:
    cosines = (vectors(str(built)) * vectors(str(default_model_path()))).sum(axis=1)
    assert cosines.min() > 0.98, cosines


@pytest.mark.slow  # quantizes the model (seconds of CPU)
def test_second_call_reuses_the_cached_file(built: Path) -> None:
    before = built.stat().st_mtime_ns
    again = quantized_model(default_model_path(), MODEL_SHA256, built.parent)
    assert again.path == built and built.stat().st_mtime_ns == before


@pytest.mark.slow  # quantizes the model (seconds of CPU)
def test_damaged_cache_file_is_rebuilt(built: Path, tmp_path: Path) -> None:
    copy = tmp_path / built.name
    shutil.copyfile(built, copy)
    shutil.copyfile(built.with_suffix(".sha256"), copy.with_suffix(".sha256"))
    with copy.open("r+b") as file:
        file.truncate(copy.stat().st_size // 2)
    rebuilt = quantized_model(default_model_path(), MODEL_SHA256, tmp_path)
    assert rebuilt.path == copy
    assert copy.read_bytes() == built.read_bytes()


@pytest.mark.slow  # quantizes the model (seconds of CPU)
def test_unwritable_cache_builds_in_memory(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    with caplog.at_level(logging.WARNING):
        model = quantized_model(default_model_path(), MODEL_SHA256, blocker / "models")
    assert model.path is None and model.data
    assert "cannot cache the int8 embedding model" in caplog.text and CACHE_ENV in caplog.text
    assert vectors(model.session_source()).shape == (len(TEXTS), 384)


def test_cache_dir_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "explicit"))
    assert cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv(CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "tap" / "models"


@pytest.mark.slow  # quantizes the model (seconds of CPU)
def test_the_quantizer_logs_nothing_of_its_own(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """onnxruntime's quantizer logs dozens of per-tensor INFO lines on the root logger; a first
    `tap serve` (logging at INFO) must show only tap's own line about deriving the model."""
    with caplog.at_level(logging.INFO):
        quantized_model(default_model_path(), MODEL_SHA256, tmp_path)
    assert "deriving the int8 embedding model" in caplog.text
    assert [record.getMessage() for record in caplog.records if record.name == "root"] == []
