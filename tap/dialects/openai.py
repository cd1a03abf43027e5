"""The OpenAI Chat Completions dialect (`POST /v1/chat/completions`).

Invariants (same cache logic as Anthropic, PROTOCOLS.md (b): OpenAI caches exact prefixes):
- only the last message is rewritten, and only when it is a `user` message; `system`/`developer`
  messages, `tools` and earlier messages are shared with the input untouched;
- the memory block is appended as a new `{"type": "text"}` content part; string content becomes
  `[{"type": "text", "text": <original>}, <memory part>]` (user messages accept content parts),
  so the original text is kept byte-identical instead of being edited in place;
- a last message with role `tool` (an agent loop) is not a human turn: `latest_user_text` is None.
"""

from __future__ import annotations

from typing import Any

from tap.dialects.common import (
    JsonDialect,
    JsonObject,
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


def error_type(status: int) -> str:
    """The OpenAI `error.type` for an HTTP status."""
    return "invalid_request_error" if 400 <= status < 500 else "server_error"


def original_parts(content: object) -> list[Any]:
    """The last user message's content as a new list of its original parts."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if content is None or isinstance(content, list):
        return list(as_list(content))
    raise ValueError("the last user message's content is neither a string nor a list of parts")


class OpenAIChat(JsonDialect):
    """OpenAI Chat Completions requests (stream only when `"stream": true`)."""

    name = "openai"
    stream_default = False

    def latest_user_text(self, req: JsonObject) -> str | None:
        """String content or text parts of the last message when its role is `user`."""
        found = last_message_if(req, "user")
        return None if found is None else nonblank(block_text(found[1].get("content")))

    def first_user_text(self, req: JsonObject) -> str | None:
        """The text of the first user message that has any."""
        return first_user_block_text(req)

    def inject(self, req: JsonObject, block: str) -> JsonObject:
        """Append `block` as a text part to the last user message (see the module docstring)."""
        text = require_block(block)
        index, message = last_user_or_raise(req)
        parts = [*original_parts(message.get("content")), {"type": "text", "text": text}]
        return replace_message(req, index, {**message, "content": parts})

    def error_body(self, status: int, message: str) -> tuple[bytes, str]:
        """`{"error": {"message", "type", "param": null, "code": null}}` as JSON."""
        error = {"message": message, "type": error_type(status), "param": None, "code": None}
        return encode_json({"error": error}), "application/json"
