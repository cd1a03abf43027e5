"""OllamaEmbedder against a fake Ollama server over real loopback HTTP (aiohttp on 127.0.0.1:0).

The embedder is synchronous, so the fake runs its own event loop in a background thread.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from aiohttp import web

from store.embedders import make_embedder
from store.ollama_embedder import OllamaEmbedder
from tap.config import parse_config
from tap.errors import EmbedderError


def fake_vector(text: str, dims: int) -> list[float]:
    """Deterministic, deliberately not unit length (so normalisation is observable)."""
    digest = hashlib.sha256(text.encode()).digest()
    return [3.0 * (digest[i % len(digest)] - 127.5) / 128 for i in range(dims)]


class FakeOllama:
    """`POST /api/embed` that records request bodies; behaviour is switched by attributes."""

    def __init__(self, dims: int = 8) -> None:
        self.dims = dims
        self.requests: list[dict[str, Any]] = []
        self.status = 200
        self.error = ""
        self.raw_body: str | None = None
        self.drop_one = False
        self.delay_s = 0.0
        self.url = ""
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, name="fake-ollama")

    async def embed(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.status != 200:
            return web.json_response({"error": self.error}, status=self.status)
        if self.raw_body is not None:
            return web.Response(text=self.raw_body, content_type="application/json")
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        vectors = [fake_vector(text, self.dims) for text in inputs]
        if self.drop_one:
            vectors = vectors[:-1]
        return web.json_response({"model": body["model"], "embeddings": vectors})

    async def _start(self) -> str:
        app = web.Application()
        app.router.add_post("/api/embed", self.embed)
        self._runner = web.AppRunner(app, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        return f"http://{host}:{port}"

    def start(self) -> None:
        self._thread.start()
        self.url = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=10)

    def stop(self) -> None:
        assert self._runner is not None
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()


@pytest.fixture
def fake() -> Iterator[FakeOllama]:
    server = FakeOllama()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def embedder(fake: FakeOllama) -> Iterator[OllamaEmbedder]:
    emb = OllamaEmbedder(fake.url, "nomic-embed-text", batch_size=2, timeout_s=5)
    yield emb
    emb.close()


def norm(vector: list[float]) -> float:
    return math.sqrt(sum(x * x for x in vector))


def test_query_is_sent_with_search_query_prefix(fake: FakeOllama, embedder: OllamaEmbedder) -> None:
    vector = embedder.embed_query("where do I live?")
    assert fake.requests == [{"model": "nomic-embed-text", "input": ["search_query: where do I live?"]}]
    assert len(vector) == fake.dims
    assert norm(vector) == pytest.approx(1.0)


def test_documents_are_prefixed_batched_and_kept_in_order(fake: FakeOllama, embedder: OllamaEmbedder) -> None:
    texts = ["a", "bb", "ccc", "dddd", "eeeee"]
    vectors = embedder.embed_documents(texts)
    assert [r["input"] for r in fake.requests] == [
        ["search_document: a", "search_document: bb"],
        ["search_document: ccc", "search_document: dddd"],
        ["search_document: eeeee"],
    ]
    for text, vector in zip(texts, vectors, strict=True):
        raw = fake_vector("search_document: " + text, fake.dims)
        assert vector == pytest.approx([x / norm(raw) for x in raw])


def test_dimensions_come_from_the_first_response(fake: FakeOllama, embedder: OllamaEmbedder) -> None:
    embedder.embed_documents(["x"])
    assert embedder.dimensions == fake.dims
    assert len(fake.requests) == 1


def test_dimensions_probe_when_nothing_embedded_yet(fake: FakeOllama, embedder: OllamaEmbedder) -> None:
    assert embedder.dimensions == fake.dims
    assert len(fake.requests) == 1
    assert fake.requests[0]["input"][0].startswith("search_query: ")
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
    fake.status, fake.error = 404, 'model "nomic-embed-text" not found, try pulling it first'
    with pytest.raises(EmbedderError, match="ollama pull nomic-embed-text") as info:
        embedder.embed_query("q")
    assert fake.url in str(info.value)
    assert "404" in str(info.value)


def test_server_error_is_an_embedder_error(fake: FakeOllama, embedder: OllamaEmbedder) -> None:
    fake.status, fake.error = 500, "out of memory"
    with pytest.raises(EmbedderError, match="HTTP 500: out of memory"):
        embedder.embed_documents(["x"])


@pytest.mark.parametrize("body", ["not json", '{"model": "m"}', '{"embeddings": "nope"}'])
def test_malformed_response_is_an_embedder_error(fake: FakeOllama, embedder: OllamaEmbedder, body: str) -> None:
    fake.raw_body = body
    with pytest.raises(EmbedderError, match="malformed"):
        embedder.embed_query("q")


def test_missing_vector_is_an_embedder_error(fake: FakeOllama, embedder: OllamaEmbedder) -> None:
    fake.drop_one = True
    with pytest.raises(EmbedderError, match="1 vectors for 2 texts"):
        embedder.embed_documents(["a", "b"])


def test_timeout_is_an_embedder_error(fake: FakeOllama) -> None:
    fake.delay_s = 0.4
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
    assert [len(r["input"]) for r in fake.requests] == [3, 1]
    emb.close()
