"""The Anthropic Messages dialect (`POST /v1/messages`): read the human turn, inject memories.

Cache safety (PROTOCOLS.md (a), consequences 1-3) is the invariant of this module:
- `system`, `tools` and every message before the last are never touched (the rewritten request
  shares those objects with the input, so they re-encode to the same bytes);
- the memory block is appended as a new `{"type": "text"}` block at the very end of the last user
  message, after any client block carrying `cache_control`, and has no `cache_control` itself;
- every original block of that message stays byte-identical and in order; string content becomes
  `[{"type": "text", "text": <original>}, <memory block>]` (the API defines a string as shorthand
  for exactly that one text block);
- top-level `cache_control` (automatic breakpoint on the *last* cacheable block) is *moved*: the
  top-level field is dropped and the same object is put on the last original block of the last
  user message, so the cached prefix ends where it ended before injection and the memories stay
  outside it.  If that block already has its own `cache_control`, it is kept as is.
"""

from __future__ import annotations

from typing import Any

from tap.dialects.common import (
    JsonDialect,
    JsonObject,
    as_dict,
    as_list,
    block_text,
    encode_json,
    first_user_block_text,
    last_message_if,
    last_user_or_raise,
    nonblank,
    replace_message,
    require_block,
)

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


class AnthropicMessages(JsonDialect):
    """Anthropic Messages API requests (stream only when `"stream": true`)."""

    name = "anthropic"
    stream_default = False

    def latest_user_text(self, req: JsonObject) -> str | None:
        """The text blocks of the last message when it is a user message.

        A turn of only `tool_result` blocks (an agent loop, not a human) has no text block, so
        it gives None, as do image-only turns and an assistant prefill at the end.
        """
        found = last_message_if(req, "user")
        return None if found is None else nonblank(block_text(found[1].get("content")))

    def first_user_text(self, req: JsonObject) -> str | None:
        """The text of the first user message that has any."""
        return first_user_block_text(req)

    def inject(self, req: JsonObject, block: str) -> JsonObject:
        """Append `block` as a text block to the last user message (see the module docstring)."""
        text = require_block(block)
        index, message = last_user_or_raise(req)
        blocks = original_blocks(message.get("content"))
        out = req
        cache_control = req.get("cache_control")
        if cache_control is not None and move_cache_control(blocks, cache_control):
            out = {k: v for k, v in req.items() if k != "cache_control"}
        blocks.append({"type": "text", "text": text})
        return replace_message(out, index, {**message, "content": blocks})

    def error_body(self, status: int, message: str) -> tuple[bytes, str]:
        """`{"type": "error", "error": {"type": ..., "message": ...}}` as JSON."""
        body = {"type": "error", "error": {"type": error_type(status), "message": message}}
        return encode_json(body), "application/json"
