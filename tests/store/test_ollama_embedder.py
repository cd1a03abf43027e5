"""OllamaEmbedder against the fake Ollama server (testkit/upstreams/ollama.py) over real loopback HTTP.

The embedder is synchronous, so the fake runs its own event loop in a background thread (InThread).
"""

from __future__ import annotations

import math
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from store.embedders import make_embedder
from store.ollama_embedder import OllamaEmbedder
from tap.config import parse_config
from tap.errors import EmbedderError
from testkit.upstreams import FakeOllama, embedding
from tests.threaded import InThread


@pytest.fixture
def fake() -> Iterator[FakeOllama]:
    with InThread(FakeOllama(dims=8)) as server:
        yield server


def sent(fake: FakeOllama) -> list[Any]:
    """The bodies /api/embed received."""
    return [request.json() for request in fake.requests]


@pytest.fixture
def embedder(fake: FakeOllama) -> Iterator[OllamaEmbedder]:
    emb = OllamaEmbedder(fake.url, "nomic-embed-text", batch_size=2, timeout_s=5)
    yield emb
    emb.close()


def norm(vector: list[float]) -> float:
    return math.sqrt(sum(x * x for x in vector))


def test_query_is_sent_with_search_query_prefix(fake: FakeOllama, embedder: OllamaEmbedder) -> None:
    vector = embedder.embed_query("where do I live?")
    assert sent(fake) == [{"model": "nomic-embed-text", "input": ["search_query: where do I live?"]}]
    assert len(vector) == fake.dims
    assert norm(vector) == pytest.approx(1.0)


def test_documents_are_prefixed_batched_and_kept_in_order(fake: FakeOllama, embedder: OllamaEmbedder) -> None:
    texts = ["a", "bb", "ccc", "dddd", "eeeee"]
    vectors = embedder.embed_documents(texts)
    assert [r["input"] for r in sent(fake)] == [
        ["search_document: a", "search_document: bb"],
        ["search_document: ccc", "search_document: dddd"],
        ["search_document: eeeee"],
    ]
    for text, vector in zip(texts, vectors, strict=True):
        raw = embedding("search_document: " + text, fake.dims)
        assert vector == pytest.approx([x / norm(raw) for x in raw])


def test_dimensions_come_from_the_first_response(fake: FakeOllama, embedder: OllamaEmbedder) -> None:
    embedder.embed_documents(["x"])
    assert embedder.dimensions == fake.dims
    assert len(fake.requests) == 1


def test_dimensions_probe_when_nothing_embedded_yet(fake: FakeOllama, embedder: OllamaEmbedder) -> None:
    assert embedder.dimensions == fake.dims
    assert len(fake.requests) == 1
    assert sent(fake)[0]["input"][0].startswith("search_query: ")
    assert embedder.dimensions == fake.dims
    assert len(fake.requests) == 1


def test_model_id_names_the_model(fake: FakeOllama) -> None:
    assert OllamaEmbedder(fake.url, "mxbai-embed-large").model_id == "ollama:mxbai-embed-large"


def test_empty_documents_make_no_request(fake: FakeOllama, embedder: OllamaEmbedder) -> None:
    assert embedder.embed_documents([]) == []
    assert fake.requests == []


def test_width_change_is_an_error(fake: FakeOllama, embedder: OllamaEmbedder) -> None:
    embedder.embed_query("first")
    fake.dims = 16
    with pytest.raises(EmbedderError, match="width"):
        embedder.embed_query("second")


def test_pinned_dimensions_are_enforced(fake: FakeOllama, embedder: OllamaEmbedder) -> None:
    embedder.dimensions = 768
    with pytest.raises(EmbedderError, match="expected 768"):
        embedder.embed_query("q")


def test_closed_port_is_an_embedder_error_naming_the_url() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    emb = OllamaEmbedder(url, timeout_s=5)
    with pytest.raises(EmbedderError, match="not reachable") as info:
        emb.embed_query("hello")
    assert url in str(info.value)
    emb.close()


def test_missing_model_suggests_pull(fake: FakeOllama, embedder: OllamaEmbedder) -> None:
    fake.reply_error(404, 'model "nomic-embed-text" not found, try pulling it first')
    with pytest.raises(EmbedderError, match="ollama pull nomic-embed-text") as info:
        embedder.embed_query("q")
    assert fake.url in str(info.value)
    assert "404" in str(info.value)


def test_server_error_is_an_embedder_error(fake: FakeOllama, embedder: OllamaEmbedder) -> None:
    fake.reply_error(500, "out of memory")
    with pytest.raises(EmbedderError, match="HTTP 500: out of memory"):
        embedder.embed_documents(["x"])


@pytest.mark.parametrize("body", ["not json", '{"model": "m"}', '{"embeddings": "nope"}'])
def test_malformed_response_is_an_embedder_error(fake: FakeOllama, embedder: OllamaEmbedder, body: str) -> None:
    fake.next_response(body=body.encode())
    with pytest.raises(EmbedderError, match="malformed"):
        embedder.embed_query("q")


def test_missing_vector_is_an_embedder_error(fake: FakeOllama, embedder: OllamaEmbedder) -> None:
    fake.reply(body={"model": "m", "embeddings": [embedding("a", fake.dims)]})  # one vector short
    with pytest.raises(EmbedderError, match="1 vectors for 2 texts"):
        embedder.embed_documents(["a", "b"])


def test_timeout_is_an_embedder_error(fake: FakeOllama) -> None:
    fake.reply(body={"model": "m", "embeddings": [embedding("q", fake.dims)]}, latency=0.4)  # answers too late
    emb = OllamaEmbedder(fake.url, timeout_s=0.1)
    with pytest.raises(EmbedderError, match="ReadTimeout"):
        emb.embed_query("q")
    emb.close()


def test_factory_builds_ollama_embedder_from_config(fake: FakeOllama) -> None:
    cfg = parse_config(
        f'[embedder]\nprovider = "ollama"\nollama_url = "{fake.url}"\nollama_model = "m"\nbatch_size = 3\n'
    )
    emb = make_embedder(cfg.embedder)
    assert isinstance(emb, OllamaEmbedder)
    assert emb.model_id == "ollama:m"
    emb.embed_documents(["1", "2", "3", "4"])
    assert [len(r["input"]) for r in sent(fake)] == [3, 1]
    emb.close()
