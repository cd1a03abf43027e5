"""The Embedder contract (tap.ports), one set of tests for every embedder: the tests' hashing
embedder and the real int8 ONNX MiniLM (Ollama's is held to its wire protocol against a fake
Ollama in test_ollama_embedder.py)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

from tap.ports import Embedder
from testkit.fakes import HashEmbedder


@pytest.fixture(params=["hash", "onnx"])
def embedder(request: pytest.FixtureRequest) -> Embedder:
    if request.param == "hash":
        return HashEmbedder()
    real: Embedder = request.getfixturevalue("onnx_embedder")
    return real


@pytest.fixture(scope="module")
def onnx_embedder() -> Any:
    from store.onnx_embedder import OnnxMiniLMEmbedder

    return OnnxMiniLMEmbedder()


def cos(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_identity_names_the_model_and_its_width(embedder: Embedder) -> None:
    assert embedder.model_id and embedder.dimensions == len(embedder.embed_query("hello")) > 0


def test_the_same_text_gets_the_same_vector(embedder: Embedder) -> None:
    assert embedder.embed_query("Ann lives in Lisbon") == embedder.embed_query("Ann lives in Lisbon")


def test_related_fact_is_closer_than_unrelated(embedder: Embedder) -> None:
    query = embedder.embed_query("I live in Lisbon")
    near, far = embedder.embed_documents(["Where does the user live? Portugal", "I like pizza"])
    assert cos(query, near) > cos(query, far) + 0.2


def test_vectors_are_unit_length(embedder: Embedder) -> None:
    vectors = [embedder.embed_query("hello"), *embedder.embed_documents(["a", "", "a longer sentence here"])]
    for vector in vectors:
        assert len(vector) == embedder.dimensions
        assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-5)


def test_batch_matches_single_exactly(embedder: Embedder) -> None:
    # The int8 model quantizes activations per run: a text's vector must not depend on its neighbours.
    texts = ["short", "a medium sized sentence about my dog", "x " * 120, "The meeting is on Tuesday at 3pm."]
    batch = embedder.embed_documents(texts)
    for text, vector in zip(texts, batch, strict=True):
        assert embedder.embed_query(text) == vector


def test_order_is_preserved_with_mixed_lengths(embedder: Embedder) -> None:
    texts = [f"{'word ' * n}number {n}" for n in (40, 1, 25, 3, 60, 0, 9, 33, 2)]
    batch = embedder.embed_documents(texts)
    singles = [embedder.embed_documents([text])[0] for text in texts]
    for got, want in zip(batch, singles, strict=True):
        assert cos(got, want) > 0.999


def test_empty_list(embedder: Embedder) -> None:
    assert embedder.embed_documents([]) == []


def test_concurrent_queries_give_the_same_vectors(embedder: Embedder) -> None:
    texts = [f"thread test sentence {i} " * (i % 5 + 1) for i in range(24)]
    expected = [embedder.embed_query(text) for text in texts]
    with ThreadPoolExecutor(max_workers=6) as pool:
        got = list(pool.map(embedder.embed_query, texts))
        batches = list(pool.map(embedder.embed_documents, [texts[:8], texts[8:16], texts[16:]]))
    for a, b in zip(got, expected, strict=True):
        assert cos(a, b) > 0.9999
    for a, b in zip([v for batch in batches for v in batch], expected, strict=True):
        assert cos(a, b) > 0.999
