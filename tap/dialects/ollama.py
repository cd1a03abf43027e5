"""The Ollama native dialects: `POST /api/chat` (messages) and `POST /api/generate` (a prompt).

Invariants:
- Ollama streams by default: `is_streaming` is True unless the request says `"stream": false`;
- message content is a plain string here, so the memory block is appended to the last user
  message's content (or to `prompt`) after a blank line; the original text stays a byte-identical
  prefix, and system, tools and earlier messages are never touched;
- a last message with role `tool` is not a human turn (`latest_user_text` is None);
- /api/generate requests in `raw` mode (a fully templated prompt) or with a `suffix`
  (fill-in-the-middle code completion) are not human turns either: appending text there would
  corrupt the template or the code, so `latest_user_text` is None for them.
"""

from __future__ import annotations

from tap.dialects.common import (
    JsonDialect,
    JsonObject,
    as_dict,
    encode_json,
    last_message_if,
    last_user_or_raise,
    messages_of,
    nonblank,
    replace_message,
    require_block,
    role_of,
    str_field,
)


def appended(original: object, block: str) -> str:
    """`original` + a blank line + `block` (just `block` when there is no original text)."""
    if original is None or original == "":
        return block
    if not isinstance(original, str):
        raise ValueError("the text to extend is not a string")
    return f"{original}\n\n{block}"


class OllamaBase(JsonDialect):
    """What both Ollama endpoints share: streaming by default, `{"error": "..."}` errors."""

    stream_default = True

    def error_body(self, status: int, message: str) -> tuple[bytes, str]:
        """`{"error": "..."}` as JSON (Ollama's error shape for every status)."""
        return encode_json({"error": message}), "application/json"


class OllamaChat(OllamaBase):
    """`POST /api/chat` requests."""

    name = "ollama_chat"

    def latest_user_text(self, req: JsonObject) -> str | None:
        """The content of the last message when its role is `user`."""
        found = last_message_if(req, "user")
        return None if found is None else nonblank(str_field(found[1], "content"))

    def first_user_text(self, req: JsonObject) -> str | None:
        """The content of the first user message that has any."""
        for message in messages_of(req):
            text = nonblank(str_field(as_dict(message), "content")) if role_of(message) == "user" else None
            if text is not None:
                return text
        return None

    def inject(self, req: JsonObject, block: str) -> JsonObject:
        """Append a blank line and `block` to the last user message's content."""
        text = require_block(block)
        index, message = last_user_or_raise(req)
        content = appended(message.get("content"), text)
        return replace_message(req, index, {**message, "content": content})


class OllamaGenerate(OllamaBase):
    """`POST /api/generate` requests: the human turn is the `prompt`."""

    name = "ollama_generate"

    def latest_user_text(self, req: JsonObject) -> str | None:
        """The prompt, unless the request is raw or fill-in-the-middle."""
        if req.get("raw") is True or str_field(req, "suffix"):
            return None
        return nonblank(str_field(req, "prompt"))

    def first_user_text(self, req: JsonObject) -> str | None:
        """The prompt (each generate request stands alone)."""
        return nonblank(str_field(req, "prompt"))

    def inject(self, req: JsonObject, block: str) -> JsonObject:
        """Append a blank line and `block` to `prompt`."""
        return {**req, "prompt": appended(req.get("prompt"), require_block(block))}
