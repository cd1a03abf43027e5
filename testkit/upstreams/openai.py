"""A fake OpenAI API: Chat Completions and Responses (streamed or not) and the model list.

    async with FakeOpenAI() as up:
        client = openai.AsyncOpenAI(base_url=up.url + "/v1", api_key="sk-test")

The answers replay the recorded transcripts in testkit/data/ (testkit/upstreams/server.py has the
scripting and the recording).
"""

from __future__ import annotations

import json

from aiohttp import web

from testkit.upstreams.server import FakeUpstream, streaming


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
