"""The OpenAI Responses API dialect (`POST /v1/responses`; the current OpenAI SDKs and Codex).

Request (openai-python `types/responses/response_create_params.py`): `input` is a string (one user
message) or a list of items (messages with `input_text` / `input_image` / `input_file` parts or
`output_text` / `refusal` ones, and the items of earlier replies and tool loops); `instructions` is
the system prompt; `previous_response_id` or `conversation` keep the history upstream, so the
request then carries only the new items.

Injection, cache-safe as in tap.intercept.dialects.openai (OpenAI caches exact prefixes):
- only the newest input item changes, or one item is appended; `instructions`, `tools` and earlier
  items are shared with the input untouched;
- the newest user message (system and developer items after it are no turn) gets the block as a
  new `input_text` part; a string `input` becomes that one message of two parts (the original text
  byte-identical);
- an agent-loop step (the input ends with tool outputs) gets the block as a new user message after
  them; with `previous_response_id` such a step may carry no human turn, and tap.intercept.core
  uses the block of the turn the chain started from (`ClientIds.follows`).

Transcript: one entry per *turn*: consecutive assistant-side items (reasoning, messages, tool
calls) are one "assistant" entry whose text is their `output_text` joined with no separator, the
streamed reply's text exactly (so continuity recognises a reply sent back); user messages are
"user", system and developer messages "system", each tool output one "tool" entry (type, call id,
output).
"""

from __future__ import annotations

from typing import Any

from tap.intercept.dialects.common import (
    JsonDialect,
    JsonObject,
    as_dict,
    as_list,
    encode_json,
    markers,
    require_block,
    str_field,
)
from tap.intercept.dialects.openai import error_type
from tap.intercept.dialects.openai_responses_stream import ResponsesStream, parse_responses_response
from tap.intercept.dialects.transcript import ClientIds, PlainMessage
from tap.intercept.dialects.wire import Reply, StreamParser

_SYSTEM_ROLES = ("system", "developer")
_CLIENT_ID_FIELDS = ("user", "safety_identifier", "prompt_cache_key")
_TOOL_OUTPUTS = ("mcp_approval_response",)
"""Tool-side item types whose name does not end in `_output`."""


def input_items(req: JsonObject) -> list[Any]:
    """The request's input as a list of items (a string is one user message; anything else: [])."""
    value = req.get("input")
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    return as_list(value)


def item_side(item: object) -> str:
    """Who an input item comes from: "user", "system", "assistant", "tool", or "" when malformed."""
    found = as_dict(item)
    if found is None:
        return ""
    kind = str_field(found, "type")
    if kind in ("", "message"):
        role = str_field(found, "role")
        if role in _SYSTEM_ROLES:
            return "system"
        return role if role in ("user", "assistant") else ""
    if kind.endswith("_output") or kind in _TOOL_OUTPUTS:
        return "tool"
    return "assistant"  # reasoning, function_call, item_reference, web_search_call, ...


def part_text(content: object, part_type: str) -> list[str]:
    """String content as one text, or the `text` of the parts of `part_type`."""
    if isinstance(content, str):
        return [content]
    return [str_field(as_dict(p), "text") for p in as_list(content) if str_field(as_dict(p), "type") == part_type]


def _output_text(value: object) -> str:
    """A tool output: a string, or the text of its content parts."""
    if isinstance(value, str):
        return value
    return "\n".join(t for t in part_text(value, "input_text") if t)


def _said(item: Any, side: str) -> PlainMessage:
    if side == "user":
        content = item.get("content")
        text = "\n".join(t for t in part_text(content, "input_text") if t)
        return PlainMessage("user", text, markers(content, skip=("input_text",)))
    if side == "system":
        return PlainMessage("system", "\n".join(t for t in part_text(item.get("content"), "input_text") if t))
    if side == "tool":
        call = str_field(item, "call_id") or str_field(item, "approval_request_id") or str_field(item, "id")
        output = _output_text(item.get("output"))
        return PlainMessage("tool", "", f"[{str_field(item, 'type')} {call}]{output}")
    return PlainMessage("", "")


def assistant_text(item: Any) -> str:
    """The visible text of an assistant-side item (its `output_text` parts; "" for tool calls)."""
    if str_field(item, "type") not in ("", "message"):
        return ""
    return "".join(part_text(item.get("content"), "output_text"))


def transcript(items: list[Any]) -> list[PlainMessage]:
    """The items as turns (see the module docstring)."""
    out: list[PlainMessage] = []
    reply: list[str] | None = None
    for item in items:
        side = item_side(item)
        if side == "assistant":
            if reply is None:
                reply = []
                out.append(PlainMessage("assistant", ""))
            reply.append(assistant_text(item))
            out[-1] = PlainMessage("assistant", "".join(reply))
            continue
        reply = None
        out.append(_said(item, side))
    return out


def _thread_id(value: object) -> str:
    """The `conversation` parameter's id (a string or `{"id": ...}`)."""
    return value if isinstance(value, str) else str_field(as_dict(value), "id")


def _user_parts(content: object) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "input_text", "text": content}] if content else []
    if content is None or isinstance(content, list):
        return list(as_list(content))
    raise ValueError("the last user message's content is neither a string nor a list of parts")


class OpenAIResponses(JsonDialect):
    """OpenAI Responses API requests (stream only when `"stream": true`)."""

    name = "openai_responses"
    upstream = "openai"
    stream_default = False

    def transcript(self, req: JsonObject) -> list[PlainMessage]:
        """The input's turns (see the module docstring)."""
        return transcript(input_items(req))

    def system_text(self, req: JsonObject) -> str:
        """`instructions`."""
        return str_field(req, "instructions")

    def client_ids(self, req: JsonObject) -> ClientIds:
        """`conversation` names the conversation (and keeps its history upstream);
        `previous_response_id` continues an upstream reply; `user`, `safety_identifier` and
        `prompt_cache_key` only tell users apart (see tap.intercept.dialects.openai)."""
        found = [f"{key}={str_field(req, key)}" for key in _CLIENT_ID_FIELDS if str_field(req, key)]
        thread = _thread_id(req.get("conversation"))
        return ClientIds(
            session=thread,
            discriminator="&".join(found),
            follows=str_field(req, "previous_response_id"),
            thread=thread,
        )

    def inject(self, req: JsonObject, block: str) -> JsonObject:
        """Append `block` to the newest user message, or as a user message after tool outputs."""
        text = require_block(block)
        part = {"type": "input_text", "text": text}
        value = req.get("input")
        if isinstance(value, str):
            return {**req, "input": [{"role": "user", "content": [*_user_parts(value), part]}]}
        items = as_list(value)
        newest = len(items) - 1
        while newest >= 0 and item_side(items[newest]) == "system":
            newest -= 1  # system and developer items after the newest turn stay after it
        side = item_side(items[newest]) if newest >= 0 else ""
        if side == "tool":
            turn = {"type": "message", "role": "user", "content": [part]}
            return {**req, "input": [*items[: newest + 1], turn, *items[newest + 1 :]]}
        if side != "user":
            raise ValueError("the newest turn is not a user message")
        item = items[newest]
        changed = {**item, "content": [*_user_parts(item.get("content")), part]}
        return {**req, "input": [*items[:newest], changed, *items[newest + 1 :]]}

    def error_body(self, status: int, message: str) -> tuple[bytes, str]:
        """`{"error": {"message", "type", "param": null, "code": null}}` as JSON (OpenAI's shape)."""
        error = {"message": message, "type": error_type(status), "param": None, "code": None}
        return encode_json({"error": error}), "application/json"

    def stream_parser(self) -> StreamParser:
        """A fresh Responses SSE tee parser."""
        return ResponsesStream()

    def parse_response(self, body: bytes) -> Reply:
        """A whole `response` object."""
        return parse_responses_response(body)
