"""Fake upstreams for multi-turn and agent-loop tests: a fresh reply per request, and a cache check.

`ChattyAnthropic` answers every `/v1/messages` with a reply of its own ("Reply number N.", plus a
`tool_use` block while `tool_use` is set), streamed or not as asked. Before answering it checks the
request against the previous one the way Anthropic's prompt cache matches prefixes: the sequence
tools → system → message blocks (cache_control markers aside) up to each of the previous
request's breakpoints must be unchanged; every mismatch is appended to `violations`.

`ChattyOpenAI` does the same for Chat Completions (`tool_calls` while `tool_use` is set); OpenAI
caches the longest exact prefix automatically, so its check is that the new request starts with
every message of the previous one except the last (the one tap may extend).
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from testkit.upstreams import FakeAnthropic, FakeOpenAI, Scripted, streaming
from testkit.wire import anthropic_stream

Block = dict[str, Any]


def _plain(block: Any) -> Any:
    return {k: v for k, v in block.items() if k != "cache_control"} if isinstance(block, dict) else block


def block_sequence(payload: dict[str, Any]) -> tuple[list[Any], list[int]]:
    """The request as Anthropic's cache sees it: tools → system → message blocks (cache_control
    markers left out), and the lengths of the prefixes it asks to cache (up to and including each
    block with `cache_control`; the whole sequence for a top-level `cache_control`)."""
    sequence: list[Any] = []
    ends: list[int] = []

    def add(item: Any, block: Any) -> None:
        sequence.append(item)
        if isinstance(block, dict) and "cache_control" in block:
            ends.append(len(sequence))

    for tool in payload.get("tools") or []:
        add(("tool", _plain(tool)), tool)
    system = payload.get("system") or []
    for block in [{"type": "text", "text": system}] if isinstance(system, str) else system:
        add(("system", _plain(block)), block)
    for index, message in enumerate(payload.get("messages") or []):
        content = message["content"]
        for block in [{"type": "text", "text": content}] if isinstance(content, str) else content:
            add(("message", index, message["role"], _plain(block)), block)
    if "cache_control" in payload:
        ends.append(len(sequence))
    return sequence, ends


def prefix_violations(previous: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """Breakpoints of `previous` whose cached prefix `current` does not repeat exactly."""
    before, ends = block_sequence(previous)
    now, _ = block_sequence(current)
    return [f"the prefix up to block {end} changed" for end in ends if now[:end] != before[:end]]


class ChattyAnthropic(FakeAnthropic):
    """See the module docstring."""

    def __init__(self) -> None:
        super().__init__(chunk_sizes=(7, 13, 64))
        self.tool_use = False
        self.replies = 0
        self.violations: list[str] = []
        self._previous: dict[str, Any] | None = None

    async def messages(self, request: web.Request) -> web.StreamResponse:
        payload = json.loads(await request.read())
        if self._previous is not None:
            self.violations += prefix_violations(self._previous, payload)
        self._previous = payload
        self.replies += 1
        content: list[Block] = [{"type": "text", "text": f"Reply number {self.replies}."}]
        if self.tool_use:
            content.append({"type": "tool_use", "id": f"toolu_{self.replies:03d}", "name": "lookup", "input": {}})
        message = {
            "id": f"msg_{self.replies:03d}",
            "type": "message",
            "role": "assistant",
            "model": "claude-haiku-4-5",
            "content": content,
            "stop_reason": "tool_use" if self.tool_use else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 7},
        }
        if streaming(payload, False):
            stream = b"".join(anthropic_stream(message))
            return await self.play(request, Scripted(body=stream, content_type="text/event-stream"))
        return await self.play(request, self.reply_json(message))


class ChattyOpenAI(FakeOpenAI):
    """See the module docstring."""

    def __init__(self) -> None:
        super().__init__(chunk_sizes=(7, 13, 64))
        self.tool_use = False
        self.replies = 0
        self.violations: list[str] = []
        self._previous: list[Any] | None = None

    async def completions(self, request: web.Request) -> web.StreamResponse:
        payload = json.loads(await request.read())
        messages = payload["messages"]
        if self._previous is not None and messages[: len(self._previous) - 1] != self._previous[:-1]:
            self.violations.append(f"request {self.replies + 1} does not start with the previous one's messages")
        self._previous = messages
        self.replies += 1
        message: dict[str, Any] = {"role": "assistant", "content": f"Reply number {self.replies}."}
        if self.tool_use:
            call = {
                "id": f"call_{self.replies:03d}",
                "type": "function",
                "function": {"name": "lookup", "arguments": "{}"},
            }
            message["tool_calls"] = [call]
        completion = {
            "id": f"chatcmpl-{self.replies}",
            "object": "chat.completion",
            "created": 1,
            "model": "gpt-4o",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if self.tool_use else "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 7, "total_tokens": 17},
        }
        return await self.play(request, self.reply_json(completion))
