"""A fake Anthropic Messages API: /v1/messages (streamed or not), /v1/messages/count_tokens, /v1/models.

    async with FakeAnthropic() as up:                       # the proxy tests: transcripts
        client = anthropic.AsyncAnthropic(base_url=up.url, api_key="sk-test")
        up.next_response(status=529)                        # script the next answer

    async with FakeAnthropic(api_key="sk-ant-test") as up:  # the provider tests: headers checked
        up.reply_tool("gate_verdict", {"worth": True, "reason": "a plan"})
        verdict, usage = await asyncio.to_thread(provider.gate, text)
        up.requests[-1].json()["tool_choice"]               # what the server received

Unscripted, `/v1/messages` replays the recorded transcripts in testkit/data/ (the SSE stream when the
request asks for `"stream": true`, else the message). Scripted replies (testkit/upstreams/server.py)
come first: `reply_tool` queues a message whose content is one `tool_use` block, `reply_error` an
API error; a scripted message with an empty `model` echoes the requested one. With an `api_key`
the fake checks the headers the real API requires before anything else: a wrong or missing key
gets 401 `authentication_error`, a missing `anthropic-version` 400. The key is accepted from
`x-api-key` or from `Authorization: Bearer` (the anthropic SDK 2.x sends an `api_key` the second way).
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Mapping
from typing import Any

from aiohttp import web

from testkit.upstreams.server import AWKWARD_CHUNKS, FakeUpstream, Scripted, streaming
from testkit.wire import ANTHROPIC_ERROR_KINDS, anthropic_error, anthropic_message


def credential(headers: Mapping[str, str]) -> str | None:
    """The API key a request carries: `x-api-key`, or `Authorization: Bearer` (what anthropic 2.x sends)."""
    bearer = headers.get("authorization", "")
    return headers.get("x-api-key") or (bearer[7:] if bearer.lower().startswith("bearer ") else None)


class FakeAnthropic(FakeUpstream):
    """Anthropic Messages API: /v1/messages (stream or not), /v1/messages/count_tokens, /v1/models."""

    default_headers = {"request-id": "req_fake_0001", "anthropic-organization-id": "org-fake"}
    stream_file = "anthropic_stream.sse"
    message_file = "anthropic_message.json"

    def __init__(
        self,
        *,
        api_key: str | None = None,
        chunk_sizes: tuple[int, ...] = AWKWARD_CHUNKS,
        delay: float = 0.0,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        super().__init__(chunk_sizes=chunk_sizes, delay=delay, tls=tls)
        self.api_key = api_key  # None: any key (or none) is accepted

    def routes(self) -> list[web.RouteDef]:
        return [
            web.post("/v1/messages", self.messages),
            web.post("/v1/messages/count_tokens", self.count_tokens),
            web.get("/v1/models", self.models),
        ]

    def error_json(self, status: int, message: str) -> bytes:
        kind = ANTHROPIC_ERROR_KINDS.get(status, "api_error")
        return json.dumps(anthropic_error(kind, message, request_id="req_fake_err")).encode()

    def check(self, request: web.Request) -> Scripted | None:
        if self.api_key is None:
            return None
        if credential(request.headers) != self.api_key:
            return self.reply_json(anthropic_error("authentication_error", "invalid x-api-key"), 401)
        if not request.headers.get("anthropic-version"):
            return self.reply_json(
                anthropic_error("invalid_request_error", "anthropic-version header is required"), 400
            )
        return None

    def complete(self, scripted: Scripted, body: bytes) -> Scripted:
        """A scripted message with an empty `model` gets the requested one (as the API echoes it)."""
        if scripted.status != 200 or scripted.content_type != "application/json":
            return scripted
        try:
            answer, asked = json.loads(scripted.body), json.loads(body)
        except ValueError:
            return scripted
        if not (isinstance(answer, dict) and answer.get("type") == "message" and not answer.get("model")):
            return scripted
        model = asked.get("model", "") if isinstance(asked, dict) else ""
        scripted.body = json.dumps({**answer, "model": model}).encode()
        return scripted

    def reply_tool(
        self,
        name: str,
        tool_input: Any,
        *,
        usage: dict[str, int] | None = None,
        stop_reason: str = "tool_use",
        model: str = "",
        latency: float = 0.0,
    ) -> None:
        """Queue a message whose content is one `tool_use` block (model "" echoes the request's)."""
        block = {"type": "tool_use", "id": "toolu_fake01", "name": name, "input": tool_input}
        self.reply(body=anthropic_message([block], usage=usage, stop_reason=stop_reason, model=model), latency=latency)

    def reply_error(self, status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> None:
        """Queue an API error."""
        self.reply(status=status, body=anthropic_error(kind, message), headers=headers)

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
