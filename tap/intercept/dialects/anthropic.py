"""The Anthropic Messages dialect (`POST /v1/messages`): read the turns, inject memories.

Cache safety (docs/protocols.md, Anthropic Messages, consequences 1-3) is the invariant of this module:
- `system`, `tools` and every message before the last are never touched (the rewritten request
  shares those objects with the input, so they re-encode to the same bytes);
- the memory block is appended as a new `{"type": "text"}` block at the very end of the newest
  user message, after any client block carrying `cache_control`, and has no `cache_control` itself;
- every original block of that message stays byte-identical and in order; string content becomes
  `[{"type": "text", "text": <original>}, <memory block>]` (the API defines a string as shorthand
  for exactly that one text block);
- top-level `cache_control` (automatic breakpoint on the *last* cacheable block) is *moved*: the
  top-level field is dropped and the same object is put on the last original block of the last
  user message, so the cached prefix ends where it ended before injection and the memories stay
  outside it.  If that block already has its own `cache_control`, it is kept as is.

Trailing system messages: Claude Code ends the first request of every session with a
`{"role": "system"}` message after the human one (its environment notes, carrying its breakpoint).
The newest turn is the user message before it, and the block goes at the end of that message, never
into the system message (memories are background data and must not speak with the authority of a
system turn) and never after it (the API wants a mid-conversation system message to follow a user
turn and precede the assistant's).  The cost, once per session: that request's breakpoint on the
system message caches a prefix that holds the block, so the next request (the same messages
without it) reads tools and `system` from the cache and writes the first prompt and the system
message again (a few thousand tokens, against the tens of thousands of tools and `system` that
stay cached); from then on that system message is history and every breakpoint keeps hitting.
With a top-level `cache_control` the automatic breakpoint is on the system message's last block,
after the memories already, so nothing is moved.

Agent-loop steps (the last user message holds only `tool_result` blocks) get the block of the
latest human turn, appended *after* the tool results of that last message (tool results must
come first in a user message; text may follow them).  Why there and not back in the human
message it was recalled for: every client breakpoint of step k lies on a block the client sent
(Claude Code marks the newest message's last block), so the block sits after all of them and is
never part of a cached prefix; step k+1 re-sends step k's messages without it, so the prefix up
to each breakpoint of step k is byte-identical and its cache entry is read (the API looks back
~20 blocks from the new breakpoint).  Re-inserting the block into the earlier human message
would also keep steps of one human turn cache-consistent, but the next human turn's request
carries that message without the block again, so every cache entry written during the loop
would miss and the whole loop would be written again.  The block bytes are the same on every
step of a human turn (tap.intercept.core caches them), so a retried step is also byte-identical.

Transcript (tap.intercept.dialects.transcript): user text is the text blocks joined by newlines; a user
message of only `tool_result` blocks has role "tool" and is identified by the tool-use ids and
result text; assistant text is the text blocks joined with no separator (tool use and thinking
are left out, as in the streamed reply).  `metadata.user_id` is the client's identity, see
`client_ids`.
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
