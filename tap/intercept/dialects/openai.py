"""The OpenAI Chat Completions dialect (`POST /v1/chat/completions`).

Invariants (same cache logic as Anthropic, docs/protocols.md, OpenAI Chat Completions: OpenAI caches exact prefixes):
- only the end of the request changes: `system`/`developer` messages, `tools` and every earlier
  message are shared with the input untouched;
- when the newest turn is a `user` message (system and developer messages after it, if any, are
  no turn: tap.intercept.dialects.transcript), the memory block is appended to it as a new
  `{"type": "text"}` content part; string content becomes
  `[{"type": "text", "text": <original>}, <memory part>]` (user messages accept content parts),
  so the original text is kept byte-identical instead of being edited in place;
- an agent-loop step (the request ends with `role: "tool"` messages after an assistant's
  `tool_calls`) gets the block as one new `{"role": "user", "content": <block>}` message after
  the tool messages: tool messages must directly follow the call they answer, and putting the
  block inside a tool result would present memories as tool output.  Caching: the cached prefix
  of a step is everything it sent; the next step re-sends those messages (without the appended
  one) and adds its own, so the prefix up to the end of the previous step's own messages is
  unchanged and is read from the cache; the appended message is identical on every step of a
  human turn (tap.intercept.core caches its bytes).

Transcript (tap.intercept.dialects.transcript): `system`/`developer` → "system"; user text is its text parts;
`tool` (and the legacy `function`) messages → "tool", identified by call id and content; assistant
text is its content only (tool calls are left out, as in the streamed reply).
"""

from __future__ import annotations

from typing import Any

from tap.intercept.dialects.common import (
    JsonDialect,
    JsonObject,
    as_dict,
    as_list,
    block_text,
    encode_json,
    insert_message,
    markers,
    messages_of,
    newest_message_if,
    newest_user_or_raise,
    replace_message,
    require_block,
    str_field,
)
from tap.intercept.dialects.openai_stream import OpenAIStream, parse_openai_response
from tap.intercept.dialects.transcript import ClientIds, PlainMessage
from tap.intercept.dialects.wire import Reply, StreamParser

_SYSTEM_ROLES = ("system", "developer")
_CLIENT_ID_FIELDS = ("user", "safety_identifier", "prompt_cache_key")


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


def said(message: object) -> PlainMessage:
    """One message, normalised (see the module docstring)."""
    msg = as_dict(message)
    role = str_field(msg, "role")
    content = msg.get("content") if msg is not None else None
    if role in _SYSTEM_ROLES:
        return PlainMessage("system", block_text(content))
    if role == "user":
        return PlainMessage("user", block_text(content), markers(content))
    if role == "assistant":
        texts = [content] if isinstance(content, str) else [str_field(as_dict(p), "text") for p in as_list(content)]
        return PlainMessage("assistant", "".join(texts))
    if role in ("tool", "function"):
        call = str_field(msg, "tool_call_id") or str_field(msg, "name")
        return PlainMessage("tool", "", f"[{role} {call}]{block_text(content)}")
    return PlainMessage("", "")


class OpenAIChat(JsonDialect):
    """OpenAI Chat Completions requests (stream only when `"stream": true`)."""

    name = "openai"
    upstream = "openai"
    stream_default = False

    def transcript(self, req: JsonObject) -> list[PlainMessage]:
        """Every message, normalised."""
        return [said(message) for message in messages_of(req)]

    def client_ids(self, req: JsonObject) -> ClientIds:
        """`user`, `safety_identifier` and `prompt_cache_key`, as a discriminator only.

        `user` and `safety_identifier` identify an end user, not a chat; `prompt_cache_key` is a
        cache-routing hint that some clients set per conversation and others per application, so
        none of them may name a conversation on its own.
        """
        found = [f"{key}={str_field(req, key)}" for key in _CLIENT_ID_FIELDS if str_field(req, key)]
        return ClientIds(discriminator="&".join(found))

    def inject(self, req: JsonObject, block: str) -> JsonObject:
        """Append `block` to the newest user message, or after the tool messages of a loop step
        (system and developer messages after the newest turn stay after it)."""
        text = require_block(block)
        step = newest_message_if(req, "tool", _SYSTEM_ROLES)
        if step is not None:
            return insert_message(req, step[0] + 1, {"role": "user", "content": text})
        index, message = newest_user_or_raise(req, _SYSTEM_ROLES)
        parts = [*original_parts(message.get("content")), {"type": "text", "text": text}]
        return replace_message(req, index, {**message, "content": parts})

    def error_body(self, status: int, message: str) -> tuple[bytes, str]:
        """`{"error": {"message", "type", "param": null, "code": null}}` as JSON."""
        error = {"message": message, "type": error_type(status), "param": None, "code": None}
        return encode_json({"error": error}), "application/json"

    def stream_parser(self) -> StreamParser:
        """A fresh Chat Completions SSE tee parser."""
        return OpenAIStream()

    def parse_response(self, body: bytes) -> Reply:
        """A whole `chat.completion` body."""
        return parse_openai_response(body)
