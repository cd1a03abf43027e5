"""The Anthropic Messages dialect (`POST /v1/messages`): read the turns, inject memories.

Cache safety (docs/protocols.md, Anthropic Messages) is this module's invariant:
- `system`, `tools` and every message before the last are never touched (the rewritten request
  shares those objects with the input, so they re-encode to the same bytes);
- the block is a new `{"type": "text"}` block at the very end of the last user message, after any
  client block with `cache_control`, without one of its own; every original block stays
  byte-identical and in order (string content becomes `[{"type": "text", "text": <original>},
  <block>]`, which the API defines as the same);
- a top-level `cache_control` is moved onto the last original block of the last user message (kept
  as is if that block has its own), so the cached prefix ends where it did before injection;
- an agent-loop step (the last user message holds only `tool_result` blocks) gets the block of the
  latest human turn after its tool results, never in the earlier human message (why:
  docs/protocols.md);
- `system` messages after the newest turn (Claude Code ends a session's first request with one)
  are no turn: the block goes into the user message before them, never into or after a system
  message, and a top-level `cache_control` is then left where it is (why: docs/protocols.md).

Transcript (tap.intercept.dialects.transcript): user text is the text blocks joined by newlines; a
message of only `tool_result` blocks is role "tool", identified by tool-use ids and result text;
assistant text is the text blocks joined with no separator (as in the streamed reply).
`metadata.user_id` is the client's identity (`client_ids`).
"""

from __future__ import annotations

import re
from typing import Any

from tap.intercept.dialects.anthropic_stream import AnthropicStream, parse_anthropic_response
from tap.intercept.dialects.common import (
    JsonDialect,
    JsonObject,
    as_dict,
    as_list,
    block_text,
    encode_json,
    messages_of,
    newest_user_or_raise,
    replace_message,
    require_block,
    str_field,
)
from tap.intercept.dialects.transcript import ClientIds, PlainMessage
from tap.intercept.dialects.wire import Reply, StreamParser, decode_json

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    504: "timeout_error",
    529: "overloaded_error",
}
_LEGACY_SESSION = re.compile(r"_session_([A-Za-z0-9-]{8,128})$")


def error_type(status: int) -> str:
    """The Anthropic `error.type` for an HTTP status."""
    default = "invalid_request_error" if 400 <= status < 500 else "api_error"
    return _ERROR_TYPES.get(status, default)


def original_blocks(content: object) -> list[Any]:
    """The last user message's content as a new list of its original blocks."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if content is None or isinstance(content, list):
        return list(as_list(content))
    raise ValueError("the last user message's content is neither a string nor a list of blocks")


def move_cache_control(blocks: list[Any], cache_control: object) -> bool:
    """Put `cache_control` on the last block (unless it has one); False when there is no block."""
    last = as_dict(blocks[-1]) if blocks else None
    if last is None:
        return False
    if "cache_control" not in last:
        blocks[-1] = {**last, "cache_control": cache_control}
    return True


def _user_markers(content: object) -> tuple[str, bool]:
    """Markers of a user message's non-text blocks, and whether it holds any tool result."""
    found: list[str] = []
    tool = False
    for block in as_list(content):
        kind = str_field(as_dict(block), "type") or "?"
        if kind == "tool_result":
            tool = True
            result = as_dict(block) or {}
            found.append(f"[tool_result {str_field(result, 'tool_use_id')}]{block_text(result.get('content'))}")
        elif kind != "text":
            found.append(f"[{kind}]")
    return "".join(found), tool


def said(message: object) -> PlainMessage:
    """One message, normalised (see the module docstring)."""
    msg = as_dict(message)
    role = str_field(msg, "role")
    content = msg.get("content") if msg is not None else None
    if role == "assistant":
        texts = [content] if isinstance(content, str) else [str_field(as_dict(b), "text") for b in as_list(content)]
        return PlainMessage("assistant", "".join(texts))
    if role == "user":
        text = block_text(content)
        extra, tool = _user_markers(content)
        return PlainMessage("tool" if tool and not text.strip() else "user", text, extra)
    if role == "system":
        return PlainMessage("system", block_text(content))
    return PlainMessage("", "")


def session_of(user_id: str) -> str:
    """The session id inside Claude Code's `metadata.user_id` ("" when there is none).

    Claude Code sends `user_<hash>_account_<uuid>_session_<uuid>` (before v2.1.78) or a JSON
    string `{"device_id": ..., "account_uuid": ..., "session_id": ...}` (from v2.1.78).
    """
    if user_id.startswith("{"):
        return str_field(as_dict(decode_json(user_id)), "session_id")
    match = _LEGACY_SESSION.search(user_id)
    return match.group(1) if match else ""


class AnthropicMessages(JsonDialect):
    """Anthropic Messages API requests (stream only when `"stream": true`)."""

    name = "anthropic"
    upstream = "anthropic"
    stream_default = False

    def transcript(self, req: JsonObject) -> list[PlainMessage]:
        """Every message, normalised."""
        return [said(message) for message in messages_of(req)]

    def system_text(self, req: JsonObject) -> str:
        """The top-level `system` (a string or text blocks)."""
        return block_text(req.get("system"))

    def client_ids(self, req: JsonObject) -> ClientIds:
        """`metadata.user_id`: a user discriminator, and a session when Claude Code embeds one.

        The API documents `user_id` as an identifier of the *user*, so on its own it only tells
        users apart (one user has many chats); Claude Code's form also names its session, which is
        what its user calls a conversation, so that session is the conversation.
        """
        user_id = str_field(as_dict(req.get("metadata")), "user_id")
        return ClientIds(session=session_of(user_id), discriminator=user_id)

    def inject(self, req: JsonObject, block: str) -> JsonObject:
        """Append `block` as a text block to the newest user message (see the module docstring)."""
        text = require_block(block)
        index, message = newest_user_or_raise(req)
        blocks = original_blocks(message.get("content"))
        out = req
        cache_control = req.get("cache_control")
        last = index == len(messages_of(req)) - 1  # else the automatic breakpoint is after the block already
        if cache_control is not None and last and move_cache_control(blocks, cache_control):
            out = {k: v for k, v in req.items() if k != "cache_control"}
        blocks.append({"type": "text", "text": text})
        return replace_message(out, index, {**message, "content": blocks})

    def error_body(self, status: int, message: str) -> tuple[bytes, str]:
        """`{"type": "error", "error": {"type": ..., "message": ...}}` as JSON."""
        body = {"type": "error", "error": {"type": error_type(status), "message": message}}
        return encode_json(body), "application/json"

    def stream_parser(self) -> StreamParser:
        """A fresh Messages SSE tee parser."""
        return AnthropicStream()

    def parse_response(self, body: bytes) -> Reply:
        """A whole Messages response body."""
        return parse_anthropic_response(body)
