"""Fake Anthropic Messages and Ollama chat servers on 127.0.0.1:0 for the provider tests.

    async with FakeAnthropicAPI(api_key="sk-ant-test") as fake:
        fake.reply_tool("gate_verdict", {"worth": True, "reason": "a plan"})
        verdict, usage = await asyncio.to_thread(provider.gate, text)
        fake.requests[-1].body["tool_choice"]          # what the server received

They speak the real wire formats (non-streamed `POST /v1/messages` answering a `message` with a
`tool_use` block and a `usage` object; `POST /api/chat` with `"stream": false` answering one chat
object with `prompt_eval_count` / `eval_count`), record every request before answering, and play
scripted replies in order. The Anthropic fake checks the headers the real API requires: a wrong or
missing key gets 401 `authentication_error`, a missing `anthropic-version` 400. The key is accepted
from `x-api-key` or from `Authorization: Bearer` (the anthropic SDK 2.x sends an `api_key` the
second way). A reply may
be delayed (to test client timeouts); delayed handlers are released when the fake shuts down.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

from aiohttp import web


@dataclass(frozen=True)
class Recorded:
    """One request as the fake received it."""

    path: str
    headers: dict[str, str]  # names lower-cased
    body: Any


@dataclass
class Reply:
    """One scripted answer."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    hold: asyncio.Event | None = None
    """The answer waits until this is set (a model that is slow for exactly as long as a test needs)."""


class FakeLLM:
    """A loopback aiohttp server with a request log and a queue of scripted replies."""

    path = "/"

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.url = ""
        self._replies: deque[Reply] = deque()
        self._closing = asyncio.Event()
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_post(self.path, self._handle)
        self._runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=0.5)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()

    def reply(
        self,
        *,
        status: int = 200,
        body: Any = None,
        headers: dict[str, str] | None = None,
        delay: float = 0.0,
        hold: asyncio.Event | None = None,
    ) -> None:
        """Queue the answer to the next request (after `delay` seconds, or once `hold` is set)."""
        self._replies.append(Reply(status=status, body=body, headers=headers or {}, delay=delay, hold=hold))

    def check(self, request: web.Request, body: Any) -> Reply | None:
        """A rejection for a request the real server would refuse, else None."""
        return None

    def finish(self, reply: Reply, body: Any) -> Any:
        """The reply body, completed from the request where the script left blanks."""
        return reply.body

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        try:
            body = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", "replace")
        headers = {name.lower(): value for name, value in request.headers.items()}
        self.requests.append(Recorded(request.path, headers, body))
        reply = self.check(request, body) or (
            self._replies.popleft() if self._replies else Reply(500, {"error": "no reply scripted"})
        )
        if reply.delay or reply.hold is not None:
            waits = [asyncio.ensure_future(self._closing.wait())]
            if reply.hold is not None:
                waits.append(asyncio.ensure_future(reply.hold.wait()))
            _, pending = await asyncio.wait(waits, timeout=reply.delay or None, return_when=asyncio.FIRST_COMPLETED)
            for waiting in pending:
                waiting.cancel()
        payload = self.finish(reply, body)
        text = payload if isinstance(payload, str) else json.dumps(payload)
        return web.Response(status=reply.status, text=text, content_type="application/json", headers=reply.headers)


def anthropic_error(kind: str, message: str) -> dict[str, Any]:
    """An error body in the Messages API's shape."""
    return {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_fake"}


def credential(headers: Mapping[str, str]) -> str | None:
    """The API key a request carries: `x-api-key`, or `Authorization: Bearer` (what anthropic 2.x sends)."""
    bearer = headers.get("authorization", "")
    return headers.get("x-api-key") or (bearer[7:] if bearer.lower().startswith("bearer ") else None)


class FakeAnthropicAPI(FakeLLM):
    """`POST /v1/messages`, non-streamed, with header checks."""

    path = "/v1/messages"

    def __init__(self, api_key: str = "sk-ant-test-key") -> None:
        super().__init__()
        self.api_key = api_key

    def check(self, request: web.Request, body: Any) -> Reply | None:
        if credential(request.headers) != self.api_key:
            return Reply(401, anthropic_error("authentication_error", "invalid x-api-key"))
        if not request.headers.get("anthropic-version"):
            return Reply(400, anthropic_error("invalid_request_error", "anthropic-version header is required"))
        return None

    def finish(self, reply: Reply, body: Any) -> Any:
        payload = reply.body
        if isinstance(payload, dict) and payload.get("type") == "message" and not payload.get("model"):
            payload = {**payload, "model": body.get("model", "")}  # echo the requested model
        return payload

    def reply_tool(
        self,
        name: str,
        tool_input: Any,
        *,
        usage: dict[str, int] | None = None,
        stop_reason: str = "tool_use",
        model: str = "",
        delay: float = 0.0,
    ) -> None:
        """Queue a message whose content is one `tool_use` block (model "" echoes the request's)."""
        block = {"type": "tool_use", "id": "toolu_fake01", "name": name, "input": tool_input}
        body = message_body([block], usage=usage, stop_reason=stop_reason, model=model)
        self.reply(body=body, delay=delay)

    def reply_error(self, status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> None:
        """Queue an API error."""
        self.reply(status=status, body=anthropic_error(kind, message), headers=headers)


def message_body(
    content: list[dict[str, Any]],
    *,
    usage: dict[str, int] | None = None,
    stop_reason: str = "tool_use",
    model: str = "",
) -> dict[str, Any]:
    """A non-streamed Messages API response."""
    counts = {"input_tokens": 812, "output_tokens": 96, "cache_creation_input_tokens": 0}
    counts |= {"cache_read_input_tokens": 0, **(usage or {})}
    return {
        "id": "msg_fake01",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": counts,
    }


class FakeOllamaAPI(FakeLLM):
    """`POST /api/chat` with `"stream": false`."""

    path = "/api/chat"

    def reply_content(
        self,
        content: Any,
        *,
        prompt_eval_count: int | None = 321,
        eval_count: int | None = 54,
        done_reason: str = "stop",
        delay: float = 0.0,
    ) -> None:
        """Queue a chat answer whose message content is `content` (JSON-encoded unless a str)."""
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
        self.reply(body=answer, delay=delay)

    def reply_error(self, status: int, message: str) -> None:
        """Queue an Ollama error (`{"error": ...}`)."""
        self.reply(status=status, body={"error": message})
