"""A fake OpenAI API: Chat Completions and Responses (streamed or not) and the model list.

    async with FakeOpenAI() as up:
        client = openai.AsyncOpenAI(base_url=up.url + "/v1", api_key="sk-test")
    async with FakeOpenAI(refuse={"json_schema"}) as up:   # a server without structured outputs
        up.reply_tool_call("record_memories", {"memories": []})

Unscripted, the answers replay the recorded transcripts in testkit/data/ (testkit/upstreams/server.py
has the scripting and the recording); `reply_content`, `reply_tool_call` and `reply_error` queue a
chat completion or an error. `refuse` names the ways of asking for JSON the server does not take
("json_schema": a `response_format` of that type; "tools": `tools`): such a request is answered
400 before any scripted reply, as servers without them answer.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Collection
from typing import Any

from aiohttp import web

from testkit.upstreams.server import AWKWARD_CHUNKS, FakeUpstream, Scripted, streaming
from testkit.wire import openai_completion, openai_error


class FakeOpenAI(FakeUpstream):
    """OpenAI: /v1/chat/completions and /v1/responses (stream or not), /v1/models."""

    default_headers = {"x-request-id": "req_fake_0001", "openai-processing-ms": "12"}
    stream_file = "openai_stream.sse"
    completion_file = "openai_completion.json"
    responses_stream_file = "openai_responses.sse"
    response_file = "openai_response.json"

    def __init__(
        self,
        *,
        refuse: Collection[str] = (),
        chunk_sizes: tuple[int, ...] = AWKWARD_CHUNKS,
        delay: float = 0.0,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        super().__init__(chunk_sizes=chunk_sizes, delay=delay, tls=tls)
        self.refuse = set(refuse)

    def check(self, request: web.Request) -> Scripted | None:
        if not self.refuse or not self.requests:
            return None
        try:
            payload = json.loads(self.requests[-1].body)
        except ValueError:
            return None
        if not isinstance(payload, dict):
            return None
        asked = payload.get("response_format")
        if "json_schema" in self.refuse and isinstance(asked, dict) and asked.get("type") == "json_schema":
            return self.reply_json(openai_error("response_format type json_schema is not supported"), 400)
        if "tools" in self.refuse and "tools" in payload:
            return self.reply_json(openai_error("tools are not supported by this server"), 400)
        return None

    def reply_content(self, content: Any, *, latency: float = 0.0, **completion: Any) -> None:
        """Queue a chat completion whose message content is `content` (JSON-encoded unless a str)."""
        text = content if isinstance(content, str) or content is None else json.dumps(content)
        self.reply(body=openai_completion(text, **completion), latency=latency)

    def reply_tool_call(self, name: str, arguments: Any, **completion: Any) -> None:
        """Queue a chat completion calling function `name` (arguments JSON-encoded unless a str)."""
        encoded = arguments if isinstance(arguments, str) else json.dumps(arguments)
        completion.setdefault("finish_reason", "tool_calls")
        self.reply(body=openai_completion(None, tool_calls=[(name, encoded)], **completion))

    def reply_error(
        self, status: int, message: str, *, kind: str = "invalid_request_error", headers: dict[str, str] | None = None
    ) -> None:
        """Queue an API error in OpenAI's shape."""
        self.reply(status=status, body=openai_error(message, kind), headers=headers)

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
