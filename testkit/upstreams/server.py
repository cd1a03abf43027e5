"""The base of every fake LLM server: the loopback lifecycle, the request log, the scripted replies.

A subclass names its dialect's routes and error shape (testkit/upstreams/anthropic.py, openai.py,
ollama.py). Every request is recorded (method, path, query, headers, raw body) *before* it is
answered. Answers go out in deliberately awkward chunk sizes (1, 2, 3, 5, ... bytes: splits land
mid-line, mid-"\\r\\n" and mid-UTF-8) with an optional delay per write.

Scripted answers (`next_response` for bytes or a transcript, `reply` for a JSON value) queue in
order and take precedence over the default routes, whatever the path: an error status (with the
dialect's own error body unless one is given), another transcript or body, a `latency` before the
answer or a `hold` (an event the answer waits for), a `hang` before the headers, a `hang_after` N
body bytes, or a `drop_after` N body bytes (the TCP connection is closed mid-body). A subclass may
`check` a request first (the Anthropic fake's key and version headers). Waiting handlers are
released when the fake shuts down.
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

DATA = Path(__file__).parent.parent / "data"
AWKWARD_CHUNKS = (1, 2, 3, 5, 8, 13, 21, 34, 7, 4, 1, 55, 2)
CONTENT_TYPES = {".sse": "text/event-stream", ".ndjson": "application/x-ndjson", ".json": "application/json"}
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def load_transcript(name: str) -> bytes:
    """The bytes of a recorded transcript in testkit/data."""
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
    """Seconds between writes (None: the fake's own)."""
    latency: float = 0.0
    """Seconds before the answer starts (a slow model; a client's timeout)."""
    hold: asyncio.Event | None = None
    """The answer waits until this is set (a model that is slow for exactly as long as a test needs)."""

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

    def check(self, request: web.Request) -> Scripted | None:
        """A rejection for a request the real server would refuse before anything else, else None."""
        return None

    def complete(self, scripted: Scripted, body: bytes) -> Scripted:
        """A queued answer, completed from the request's body where the script left blanks."""
        return scripted

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
        self.end_hangs()
        if self._runner is not None:
            await self._runner.cleanup()

    def end_hangs(self) -> None:
        """End every hang and held wait now, as closing the fake does: a hang before the headers
        answers 503, a `hang_after` answer is finished. Lets a client that sits in front of the fake
        (tap) finish its request before it is itself shut down, instead of waiting out its timeout."""
        self._closing.set()

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
        latency: float = 0.0,
        hold: asyncio.Event | None = None,
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
                latency=latency,
                hold=hold,
            )
        )

    def reply(
        self,
        *,
        status: int = 200,
        body: Any = None,
        headers: dict[str, str] | None = None,
        latency: float = 0.0,
        hold: asyncio.Event | None = None,
    ) -> None:
        """Queue a JSON answer to the next request (a str body is sent as it is)."""
        raw = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.next_response(status=status, body=raw, headers=headers, latency=latency, hold=hold)

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
        rejection = self.check(request)
        if rejection is not None:
            return await self.play(request, rejection)
        if self._queue:
            return await self.play(request, self.complete(self._queue.popleft(), body))
        return await handler(request)

    async def _not_found(self, request: web.Request) -> web.StreamResponse:
        return await self.play(request, Scripted(status=404, body=self.error_json(404, "not found")))

    async def bad_json(self, request: web.Request) -> web.StreamResponse:
        """400 in the dialect's shape."""
        return await self.play(request, Scripted(status=400, body=self.error_json(400, "invalid JSON body")))

    async def play(self, request: web.Request, s: Scripted) -> web.StreamResponse:
        """Send a scripted response, honouring latency / hold / hang / hang_after / drop_after."""
        if s.hang:
            await self._closing.wait()
            return web.Response(status=503)
        if s.latency or s.hold is not None:
            await self._wait(s.latency or None, s.hold)
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

    async def _wait(self, seconds: float | None, hold: asyncio.Event | None) -> None:
        """Wait `seconds` or for `hold`, whichever comes first; at once when the fake closes."""
        waits = [asyncio.ensure_future(self._closing.wait())]
        if hold is not None:
            waits.append(asyncio.ensure_future(hold.wait()))
        _, pending = await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        for waiting in pending:
            waiting.cancel()

    def _drop(self, request: web.Request, resp: web.StreamResponse) -> web.StreamResponse:
        """Close the TCP connection mid-body (the client sees a truncated response)."""
        if request.transport is not None:
            request.transport.close()
        return resp


def streaming(payload: Any, default: bool) -> bool:
    """The request's `stream` flag as the real server reads it."""
    value = payload.get("stream") if isinstance(payload, dict) else None
    return default if value is None else value is True
