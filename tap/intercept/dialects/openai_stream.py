"""OpenAI Chat Completions responses: the SSE stream and the whole JSON body, as a `Reply`.

Stream (docs/protocols.md, OpenAI Chat Completions): data-only SSE chunks whose
`choices[].delta.content` carry the text, a final usage chunk when `stream_options.include_usage` is
set (`choices` empty), the literal terminator `data: [DONE]`, and `{"error": ...}` objects for
mid-stream errors. Only choice 0 (the lowest index) is the answer: `n > 1` choices are not merged.
Cached prompt tokens (`prompt_tokens_details.cached_tokens`) are also reported under Anthropic's
name `cache_read_input_tokens`. Invariants: see tap.intercept.dialects.wire.
"""

from __future__ import annotations

from typing import Any

from tap.intercept.dialects.common import as_dict, as_list, int_fields, str_field
from tap.intercept.dialects.wire import Assembler, Reply, SSEEvent, SSEParser, decode_json, with_io_tokens


def _choices(state: Assembler, choices: object, key: str) -> None:
    for choice in as_list(choices):
        found = as_dict(choice) or {}
        state.add_text(found.get("index", 0), str_field(as_dict(found.get(key)), "content"))
        if found.get("index", 0) == 0 and str_field(found, "finish_reason"):
            state.stop_reason = str_field(found, "finish_reason")


def _usage(usage: object) -> dict[str, int]:
    counts = int_fields(usage)
    details = int_fields((as_dict(usage) or {}).get("prompt_tokens_details"))
    if counts and "cached_tokens" in details:
        counts["cache_read_input_tokens"] = details["cached_tokens"]  # Anthropic's name for it
    return with_io_tokens(counts, "prompt_tokens", "completion_tokens")


def _chunk(state: Assembler, chunk: dict[str, Any], key: str) -> None:
    if chunk.get("error") is not None:
        state.set_error(chunk["error"])
        return
    state.set_model(chunk.get("model"))
    _choices(state, chunk.get("choices"), key)
    usage = _usage(chunk.get("usage"))
    if usage:
        state.usage = usage


class OpenAIStream(SSEParser):
    """Chat Completions SSE: `delta.content` of choice 0, `[DONE]`, usage chunk, `{"error": ...}`."""

    def handle(self, event: SSEEvent) -> None:
        """Apply one chunk; `[DONE]` completes the reply."""
        if event.data.strip() == "[DONE]":
            self.state.complete = True
            return
        data = as_dict(decode_json(event.data))
        if data is not None:
            _chunk(self.state, data, "delta")

    def text(self) -> str:
        """Choice 0's text."""
        return self.state.first_text()


def parse_openai_response(body: bytes) -> Reply:
    """A non-streamed `chat.completion` object (or an `{"error": ...}` body)."""
    state = Assembler()
    data = as_dict(decode_json(body)) or {}
    _chunk(state, data, "message")
    state.complete = not state.error and bool(as_list(data.get("choices")))
    return state.reply(state.first_text())
