"""The Ollama native dialects: `POST /api/chat` (messages) and `POST /api/generate` (a prompt).

Invariants:
- Ollama streams by default: `is_streaming` is True unless the request says `"stream": false`;
- message content is a plain string here, so the memory block is appended to the last user
  message's content (or to `prompt`) after a blank line; the original text stays a byte-identical
  prefix, and system, tools and earlier messages are never touched;
- an agent-loop step (the request ends with `role: "tool"` messages) gets the block as one new
  `{"role": "user", "content": <block>}` message after them, for the reasons given in
  tap.intercept.dialects.openai (Ollama reuses its KV cache for an unchanged prompt prefix, and the
  previous step's messages come back unchanged);
- /api/generate requests in `raw` mode (a fully templated prompt) or with a `suffix`
  (fill-in-the-middle code completion) are not human turns: appending text there would corrupt
  the template or the code, so their transcript entry has no text and nothing is injected.
"""

from __future__ import annotations

from tap.intercept.dialects.common import (
    JsonDialect,
    JsonObject,
    as_dict,
    as_list,
    encode_json,
    insert_message,
    messages_of,
    newest_message_if,
    newest_user_or_raise,
    replace_message,
    require_block,
    str_field,
)
from tap.intercept.dialects.ollama_stream import OllamaStream, parse_ollama_response
from tap.intercept.dialects.transcript import PlainMessage
from tap.intercept.dialects.wire import Reply, StreamParser


def appended(original: object, block: str) -> str:
    """`original` + a blank line + `block` (just `block` when there is no original text)."""
    if original is None or original == "":
        return block
    if not isinstance(original, str):
        raise ValueError("the text to extend is not a string")
    return f"{original}\n\n{block}"


def said(message: object) -> PlainMessage:
    """One /api/chat message, normalised (tool messages are identified by tool name and content)."""
    msg = as_dict(message)
    role = str_field(msg, "role")
    content = str_field(msg, "content")
    if role == "tool":
        return PlainMessage("tool", "", f"[tool {str_field(msg, 'tool_name')}]{content}")
    if role in ("system", "user", "assistant"):
        images = "[images]" if as_list(msg.get("images") if msg is not None else None) and role == "user" else ""
        return PlainMessage(role, content, images)
    return PlainMessage("", "")


class OllamaBase(JsonDialect):
    """What both Ollama endpoints share: streaming by default, `{"error": "..."}` errors, NDJSON."""

    upstream = "ollama"
    stream_default = True

    def error_body(self, status: int, message: str) -> tuple[bytes, str]:
        """`{"error": "..."}` as JSON (Ollama's error shape for every status)."""
        return encode_json({"error": message}), "application/json"

    def stream_parser(self) -> StreamParser:
        """A fresh NDJSON tee parser."""
        return OllamaStream()

    def parse_response(self, body: bytes) -> Reply:
        """A whole (non-streamed) response body."""
        return parse_ollama_response(body)


class OllamaChat(OllamaBase):
    """`POST /api/chat` requests."""

    name = "ollama_chat"

    def transcript(self, req: JsonObject) -> list[PlainMessage]:
        """Every message, normalised."""
        return [said(message) for message in messages_of(req)]

    def inject(self, req: JsonObject, block: str) -> JsonObject:
        """Append a blank line and `block` to the last user message, or a user message after tools."""
        text = require_block(block)
        step = newest_message_if(req, "tool")
        if step is not None:
            return insert_message(req, step[0] + 1, {"role": "user", "content": text})
        index, message = newest_user_or_raise(req)
        content = appended(message.get("content"), text)
        return replace_message(req, index, {**message, "content": content})


class OllamaGenerate(OllamaBase):
    """`POST /api/generate` requests: the human turn is the `prompt`."""

    name = "ollama_generate"

    def transcript(self, req: JsonObject) -> list[PlainMessage]:
        """One entry: the prompt (without text in raw or fill-in-the-middle mode)."""
        if req.get("raw") is True or str_field(req, "suffix"):
            return [PlainMessage("user", "", "[raw]")]
        return [PlainMessage("user", str_field(req, "prompt"))]

    def system_text(self, req: JsonObject) -> str:
        """The request's `system` override."""
        return str_field(req, "system")

    def inject(self, req: JsonObject, block: str) -> JsonObject:
        """Append a blank line and `block` to `prompt`."""
        return {**req, "prompt": appended(req.get("prompt"), require_block(block))}
