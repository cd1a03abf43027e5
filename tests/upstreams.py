"""Fake LLM API upstreams on real loopback HTTP (127.0.0.1, port 0) for proxy and SDK tests.

    async with FakeAnthropic() as up:          # also FakeOpenAI, FakeOllama
        client = anthropic.AsyncAnthropic(base_url=up.url, api_key="sk-test")
        ...
        up.requests[-1].json()                 # what the upstream received (raw body kept too)
        up.next_response(status=529)           # script the next response (any path)

Each fake records every request (method, path, query, headers, raw body) *before* answering,
and replays the recorded transcripts in `tests/data/` in deliberately awkward chunk sizes (1, 2,
3, 5, ... bytes: splits land mid-line, mid-"\\r\\n" and mid-UTF-8) with an optional delay per write.
`next_response` queues scripted answers that take precedence over the default routes: an error
status (with the dialect's own error body unless one is given), another transcript or body, a
`hang` before the headers, a `hang_after` N body bytes, or a `drop_after` N body bytes (the TCP
connection is closed mid-body).  Hanging handlers are released when the fake shuts down.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections import deque
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from aiohttp import web
from multidict import CIMultiDict

DATA = Path(__file__).parent / "data"
AWKWARD_CHUNKS = (1, 2, 3, 5, 8, 13, 21, 34, 7, 4, 1, 55, 2)
CONTENT_TYPES = {".sse": "text/event-stream", ".ndjson": "application/x-ndjson", ".json": "application/json"}
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def load_transcript(name: str) -> bytes:
    """The bytes of a recorded transcript in tests/data."""
    return (DATA / name).read_bytes()


def chunks(body: bytes, sizes: tuple[int, ...]) -> Iterator[bytes]:
    """`body` cut into pieces whose sizes cycle through `sizes`."""
    pos, i = 0, 0
    while pos < len(body):
        size = max(1, sizes[i % len(sizes)])
        yield body[pos : pos + size]
        pos, i = pos + size, i + 1


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the fake upstream received it."""

    method: str
    path: str
    query: str
    headers: CIMultiDict[str]
    body: bytes

    def json(self) -> Any:
        """The body decoded as JSON."""
        return json.loads(self.body)


@dataclass
class Scripted:
    """One scripted response."""

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    hang: bool = False
    hang_after: int | None = None
    drop_after: int | None = None
    chunk_sizes: tuple[int, ...] | None = None
    delay: float | None = None

    @property
    def streamed(self) -> bool:
        return self.content_type in ("text/event-stream", "application/x-ndjson")


class FakeUpstream:
    """Base class: the server lifecycle, the request log, the scripted-response queue."""

    default_headers: dict[str, str] = {}

    def __init__(
        self, *, chunk_sizes: tuple[int, ...] = AWKWARD_CHUNKS, delay: float = 0.0, tls: ssl.SSLContext | None = None
    ) -> None:
        self.chunk_sizes = chunk_sizes
        self.delay = delay
        self.tls = tls  # serve HTTPS with this context (tests of the mitmproxy addon)
        self.requests: list[RecordedRequest] = []
        self.url = ""
        self.port = 0
        self._queue: deque[Scripted] = deque()
        self._closing = asyncio.Event()
        self._runner: web.AppRunner | None = None

    # -- to override ------------------------------------------------------------------------

    def routes(self) -> list[web.RouteDef]:
        """The dialect's routes."""
        return []

    def error_json(self, status: int, message: str) -> bytes:
        """An error body in the dialect's own shape."""
        return json.dumps({"error": message}).encode()

    # -- lifecycle ----------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        app = web.Application(
            middlewares=[self._middleware],
            client_max_size=256 * 1024 * 1024,
            handler_args={"auto_decompress": False},  # a body is recorded as sent (and bad JSON is a 400)
        )
        app.add_routes([*self.routes(), web.route("*", "/{tail:.*}", self._not_found)])
        self._runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=self.tls)
        await site.start()
        self.port = self._runner.addresses[0][1]
        self.url = f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()

    # -- scripting ------------------------------------------------------------------------------

    def next_response(
        self,
        *,
        status: int = 200,
        body: bytes | None = None,
        transcript: str | None = None,
        content_type: str | None = None,
        headers: dict[str, str] | None = None,
        hang: bool = False,
        hang_after: int | None = None,
        drop_after: int | None = None,
        chunk_sizes: tuple[int, ...] | None = None,
        delay: float | None = None,
    ) -> None:
        """Queue the answer to the next request (whatever its path); calls queue in order."""
        if transcript is not None:
            body = load_transcript(transcript)
            content_type = content_type or CONTENT_TYPES[Path(transcript).suffix]
        if body is None:
            body = b"{}" if status < 400 else self.error_json(status, f"scripted error {status}")
        self._queue.append(
            Scripted(
                status=status,
                body=body,
                content_type=content_type or "application/json",
                headers=headers or {},
                hang=hang,
                hang_after=hang_after,
                drop_after=drop_after,
                chunk_sizes=chunk_sizes,
                delay=delay,
            )
        )

    def reply_file(self, name: str) -> Scripted:
        """A 200 answer replaying a transcript file."""
        return Scripted(body=load_transcript(name), content_type=CONTENT_TYPES[Path(name).suffix])

    def reply_json(self, value: Any, status: int = 200) -> Scripted:
        """An answer with a JSON body."""
        return Scripted(status=status, body=json.dumps(value).encode())

    # -- serving --------------------------------------------------------------------------------

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        body = await request.read()
        self.requests.append(
            RecordedRequest(request.method, request.path, request.query_string, CIMultiDict(request.headers), body)
        )
        if self._queue:
            return await self.play(request, self._queue.popleft())
        return await handler(request)

    async def _not_found(self, request: web.Request) -> web.StreamResponse:
        return await self.play(request, Scripted(status=404, body=self.error_json(404, "not found")))

    async def bad_json(self, request: web.Request) -> web.StreamResponse:
        """400 in the dialect's shape."""
        return await self.play(request, Scripted(status=400, body=self.error_json(400, "invalid JSON body")))

    async def play(self, request: web.Request, s: Scripted) -> web.StreamResponse:
        """Send a scripted response, honouring hang / hang_after / drop_after."""
        if s.hang:
            await self._closing.wait()
            return web.Response(status=503)
        resp = web.StreamResponse(status=s.status, headers={**self.default_headers, **s.headers})
        resp.content_type = s.content_type
        if s.streamed:
            resp.headers["Cache-Control"] = "no-cache"
            resp.enable_chunked_encoding()
        else:
            resp.content_length = len(s.body)
        await resp.prepare(request)
        if request.method == "HEAD":  # headers only, as a real server answers HEAD
            await resp.write_eof()
            return resp
        return await self._write_body(request, resp, s)

    async def _write_body(self, request: web.Request, resp: web.StreamResponse, s: Scripted) -> web.StreamResponse:
        limit = min(x for x in (s.drop_after, s.hang_after, len(s.body)) if x is not None)
        delay = self.delay if s.delay is None else s.delay
        for piece in chunks(s.body[:limit], s.chunk_sizes or self.chunk_sizes):
            await resp.write(piece)
            await asyncio.sleep(delay)
        if s.hang_after is not None and limit == s.hang_after:
            await self._closing.wait()
        if s.drop_after is not None and limit == s.drop_after:
            return self._drop(request, resp)
        await resp.write_eof()
        return resp

    def _drop(self, request: web.Request, resp: web.StreamResponse) -> web.StreamResponse:
        """Close the TCP connection mid-body (the client sees a truncated response)."""
        if request.transport is not None:
            request.transport.close()
        return resp


def streaming(payload: Any, default: bool) -> bool:
    """The request's `stream` flag as the real server reads it."""
    value = payload.get("stream") if isinstance(payload, dict) else None
    return default if value is None else value is True


class FakeAnthropic(FakeUpstream):
    """Anthropic Messages API: /v1/messages (stream or not), /v1/messages/count_tokens, /v1/models."""

    default_headers = {"request-id": "req_fake_0001", "anthropic-organization-id": "org-fake"}
    stream_file = "anthropic_stream.sse"
    message_file = "anthropic_message.json"

    def routes(self) -> list[web.RouteDef]:
        return [
            web.post("/v1/messages", self.messages),
            web.post("/v1/messages/count_tokens", self.count_tokens),
            web.get("/v1/models", self.models),
        ]

    def error_json(self, status: int, message: str) -> bytes:
        kinds = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error"}
        kinds |= {429: "rate_limit_error", 529: "overloaded_error", 504: "timeout_error"}
        error = {"type": kinds.get(status, "api_error"), "message": message}
        return json.dumps({"type": "error", "error": error, "request_id": "req_fake_err"}).encode()

    async def messages(self, request: web.Request) -> web.StreamResponse:
        try:
            payload = json.loads(await request.read())
        except (ValueError, RecursionError):
            return await self.bad_json(request)
        name = self.stream_file if streaming(payload, False) else self.message_file
        return await self.play(request, self.reply_file(name))

    async def count_tokens(self, request: web.Request) -> web.StreamResponse:
        return await self.play(request, self.reply_json({"input_tokens": max(1, len(await request.read()) // 4)}))

    async def models(self, request: web.Request) -> web.StreamResponse:
        model = {"type": "model", "id": "claude-sonnet-4-5-20250929", "display_name": "Claude Sonnet 4.5"}
        model["created_at"] = "2025-09-29T00:00:00Z"
        page = {"data": [model], "has_more": False, "first_id": model["id"], "last_id": model["id"]}
        return await self.play(request, self.reply_json(page))


class FakeOpenAI(FakeUpstream):
    """OpenAI: /v1/chat/completions and /v1/responses (stream or not), /v1/models."""

    default_headers = {"x-request-id": "req_fake_0001", "openai-processing-ms": "12"}
    stream_file = "openai_stream.sse"
    completion_file = "openai_completion.json"
    responses_stream_file = "openai_responses.sse"
    response_file = "openai_response.json"

    def routes(self) -> list[web.RouteDef]:
        return [
            web.post("/v1/chat/completions", self.completions),
            web.post("/v1/responses", self.responses),
            web.get("/v1/models", self.models),
        ]

    def error_json(self, status: int, message: str) -> bytes:
        kind = "invalid_request_error" if status < 500 else "server_error"
        return json.dumps({"error": {"message": message, "type": kind, "param": None, "code": None}}).encode()

    async def completions(self, request: web.Request) -> web.StreamResponse:
        try:
            payload = json.loads(await request.read())
        except (ValueError, RecursionError):
            return await self.bad_json(request)
        name = self.stream_file if streaming(payload, False) else self.completion_file
        return await self.play(request, self.reply_file(name))

    async def responses(self, request: web.Request) -> web.StreamResponse:
        try:
            payload = json.loads(await request.read())
        except (ValueError, RecursionError):
            return await self.bad_json(request)
        name = self.responses_stream_file if streaming(payload, False) else self.response_file
        return await self.play(request, self.reply_file(name))

    async def models(self, request: web.Request) -> web.StreamResponse:
        model = {"id": "gpt-4o-2024-08-06", "object": "model", "created": 1722814719, "owned_by": "system"}
        return await self.play(request, self.reply_json({"object": "list", "data": [model]}))


class FakeOllama(FakeUpstream):
    """Ollama native API: /api/chat and /api/generate (NDJSON unless "stream": false), /api/tags."""

    def routes(self) -> list[web.RouteDef]:
        return [
            web.post("/api/chat", self.chat),
            web.post("/api/generate", self.generate),
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
