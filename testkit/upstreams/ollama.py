"""A fake Ollama native API: /api/chat and /api/generate (NDJSON unless `"stream": false`),
/api/embed, /api/tags and the root's "Ollama is running".

    async with FakeOllama() as up:                  # chat: the proxy tests replay transcripts
        up.reply_content({"worth": True})           # ... the provider tests script a chat answer
    with InThread(FakeOllama(dims=8)) as up:        # the synchronous OllamaEmbedder's tests
        OllamaEmbedder(up.url, "nomic-embed-text").embed_query("where do I live?")

Unscripted, chat and generate replay the recorded transcripts in testkit/data/, and /api/embed
answers every input with `embedding(text, dims)`: deterministic, and deliberately not unit length
(so an embedder's normalisation is observable). Scripted replies (testkit/upstreams/server.py) come
first: `reply_content` queues a non-streamed chat answer, `reply_error` an `{"error": ...}`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import ssl
from typing import Any

from aiohttp import web

from testkit.upstreams.server import AWKWARD_CHUNKS, FakeUpstream, Scripted, streaming


def embedding(text: str, dims: int) -> list[float]:
    """The fake's vector for `text`: deterministic, deliberately not unit length."""
    digest = hashlib.sha256(text.encode()).digest()
    return [3.0 * (digest[i % len(digest)] - 127.5) / 128 for i in range(dims)]


class FakeOllama(FakeUpstream):
    """Ollama native API: /api/chat and /api/generate (NDJSON unless "stream": false), /api/embed, /api/tags."""

    def __init__(
        self,
        *,
        dims: int = 8,
        chunk_sizes: tuple[int, ...] = AWKWARD_CHUNKS,
        delay: float = 0.0,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        super().__init__(chunk_sizes=chunk_sizes, delay=delay, tls=tls)
        self.dims = dims  # the width of /api/embed's vectors (a test may change it between requests)

    def routes(self) -> list[web.RouteDef]:
        return [
            web.post("/api/chat", self.chat),
            web.post("/api/generate", self.generate),
            web.post("/api/embed", self.embed),
            web.get("/api/tags", self.tags),
            web.get("/", self.root),
        ]

    async def _answer(self, request: web.Request, stem: str) -> web.StreamResponse:
        try:
            payload = json.loads(await request.read())
        except (ValueError, RecursionError):
            return await self.bad_json(request)
        suffix = ".ndjson" if streaming(payload, True) else ".json"
        return await self.play(request, self.reply_file(stem + suffix))

    async def chat(self, request: web.Request) -> web.StreamResponse:
        return await self._answer(request, "ollama_chat")

    async def generate(self, request: web.Request) -> web.StreamResponse:
        return await self._answer(request, "ollama_generate")

    async def embed(self, request: web.Request) -> web.StreamResponse:
        try:
            payload = json.loads(await request.read())
        except (ValueError, RecursionError):
            return await self.bad_json(request)
        texts = payload.get("input") if isinstance(payload, dict) else None
        texts = [texts] if isinstance(texts, str) else texts
        if not (isinstance(texts, list) and all(isinstance(text, str) for text in texts)):
            return await self.play(request, self.reply_json({"error": "invalid input type"}, 400))
        vectors = [embedding(text, self.dims) for text in texts]
        return await self.play(request, self.reply_json({"model": payload.get("model"), "embeddings": vectors}))

    def reply_content(
        self,
        content: Any,
        *,
        prompt_eval_count: int | None = 321,
        eval_count: int | None = 54,
        done_reason: str = "stop",
        latency: float = 0.0,
        hold: asyncio.Event | None = None,
    ) -> None:
        """Queue a non-streamed chat answer whose message content is `content` (JSON-encoded unless a str)."""
        text = content if isinstance(content, str) else json.dumps(content)
        answer: dict[str, Any] = {
            "model": "llama3.2",
            "created_at": "2026-10-01T12:00:00.6Z",
            "message": {"role": "assistant", "content": text},
            "done": True,
            "done_reason": done_reason,
            "total_duration": 4883583458,
        }
        if prompt_eval_count is not None:
            answer["prompt_eval_count"] = prompt_eval_count
        if eval_count is not None:
            answer["eval_count"] = eval_count
        self.reply(body=answer, latency=latency, hold=hold)

    def reply_error(self, status: int, message: str) -> None:
        """Queue an Ollama error (`{"error": ...}`)."""
        self.reply(status=status, body={"error": message})

    async def tags(self, request: web.Request) -> web.StreamResponse:
        details = {
            "format": "gguf",
            "family": "llama",
            "parameter_size": "3.2B",
            "quantization_level": "Q4_K_M",
        }
        model = {"name": "llama3.2:latest", "model": "llama3.2:latest", "size": 2019393189}
        model |= {"modified_at": "2026-10-01T12:00:00Z", "digest": "a80c4f17acd5", "details": details}
        return await self.play(request, self.reply_json({"models": [model]}))

    async def root(self, request: web.Request) -> web.StreamResponse:
        return await self.play(request, Scripted(body=b"Ollama is running", content_type="text/plain"))
