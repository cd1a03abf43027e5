"""Tee parsers: reassemble the assistant's reply from a *copy* of the upstream response bytes.

The proxy forwards upstream bytes unchanged and feeds the same chunks here; `finish()` returns a
`Reply`.  One parser per wire format: Anthropic SSE, OpenAI Chat Completions SSE, Ollama NDJSON
(both /api/chat and /api/generate); `parse_response` does the same for non-streamed bodies.
The module is one file in sections (lines/SSE, shared assembler, one section per format) because
every format builds on the same line splitter and assembler; `stream_parser(name)` and
`parse_response(name, body)` take the names of `tap.dialects.DIALECTS`.

Invariants:
- `feed` and `finish` never raise on bad input: an event that is not valid JSON, or has
  unexpected shapes, contributes nothing and parsing carries on;
- linear time: bytes are split on b"\\n" as they arrive and only the unfinished last line is
  kept, as a list of pieces joined once its newline arrives (so a huge line fed one byte at a
  time is still O(total bytes));
- lines are split *before* UTF-8 decoding (0x0A never occurs inside a multi-byte sequence), so a
  chunk boundary mid-character or between "\\r" and "\\n" cannot corrupt the text;
- only visible answer text counts: tool-use JSON, tool-call arguments, thinking and refusals are
  not text; Anthropic text is reassembled per content-block index and joined in index order
  with no separator (citations split one answer into several consecutive text blocks);
- `usage` always uses `input_tokens`/`output_tokens` when the upstream reported usage, plus the
  upstream's own integer fields (e.g. `cache_read_input_tokens`, `prompt_tokens`);
- `complete` is True only when the format's terminal event arrived (`message_stop`,
  `data: [DONE]`, `"done": true`; a whole, well-formed body for `parse_response`).
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

import msgspec

from tap.dialects.common import as_dict, as_list, int_fields, str_field


class Reply(msgspec.Struct, kw_only=True):
    """The assistant's side of one exchange, as reassembled from the upstream response."""

    text: str = ""
    model: str = ""
    usage: dict[str, int] = msgspec.field(default_factory=dict)
    stop_reason: str = ""
    error: str = ""
    complete: bool = False


class StreamParser(Protocol):
    """An incremental parser fed a copy of the response bytes."""

    def feed(self, chunk: bytes) -> None:
        """Consume the next chunk (any size, split anywhere)."""
        ...

    def finish(self) -> Reply:
        """Flush what is left and return the reply assembled so far."""
        ...


def decode_json(text: str | bytes) -> Any:
    """Decode one JSON value, or None when it is not valid JSON."""
    try:
        return msgspec.json.decode(text)
    except msgspec.DecodeError:
        return None


def error_text(error: object) -> str:
    """An upstream error's message: a string, or an object's `message` (else its `type`)."""
    if isinstance(error, str):
        return error or "error"
    found = as_dict(error)
    if found is None:
        return ""
    return str_field(found, "message") or str_field(found, "type") or "error"


class LineSplitter:
    """Split a byte stream into text lines (LF or CRLF), keeping only the unfinished tail."""

    def __init__(self) -> None:
        self._pending: list[bytes] = []
        self._started = False

    def feed(self, chunk: bytes) -> list[str]:
        """The lines completed by `chunk`."""
        if b"\n" not in chunk:
            if chunk:
                self._pending.append(chunk)
            return []
        pieces = chunk.split(b"\n")
        self._pending.append(pieces[0])
        lines = [b"".join(self._pending), *pieces[1:-1]]
        self._pending = [pieces[-1]] if pieces[-1] else []
        return [self._decode(line) for line in lines]

    def flush(self) -> list[str]:
        """The unterminated last line, if any."""
        rest = b"".join(self._pending)
        self._pending = []
        return [self._decode(rest)] if rest else []

    def _decode(self, line: bytes) -> str:
        text = line.removesuffix(b"\r").decode("utf-8", "replace")
        if not self._started:
            self._started = True
            text = text.removeprefix("\ufeff")
        return text


class SSEEvent(NamedTuple):
    """One server-sent event: its name ("message" when unnamed) and its joined data lines."""

    event: str
    data: str


class SSEDecoder:
    """Incremental server-sent-events decoder (comments, `id:` and `retry:` are ignored)."""

    def __init__(self) -> None:
        self._lines = LineSplitter()
        self._event = ""
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """The events completed by `chunk`."""
        return self._process(self._lines.feed(chunk))

    def flush(self) -> list[SSEEvent]:
        """Events left at end of stream (a last event without its blank line is kept)."""
        return self._process([*self._lines.flush(), ""])

    def _process(self, lines: list[str]) -> list[SSEEvent]:
        events: list[SSEEvent] = []
        for line in lines:
            if not line:
                self._dispatch(events)
            elif not line.startswith(":"):
                self._field(*line.partition(":")[::2])
        return events

    def _field(self, name: str, value: str) -> None:
        value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value

    def _dispatch(self, events: list[SSEEvent]) -> None:
        if self._data:
            events.append(SSEEvent(self._event or "message", "\n".join(self._data)))
        self._event = ""
        self._data = []


class _Assembler:
    """Reply state shared by the parsers: text fragments per index, model, usage, errors."""

    def __init__(self) -> None:
        self.parts: dict[int, list[str]] = {}
        self.model = ""
        self.usage: dict[str, int] = {}
        self.stop_reason = ""
        self.error = ""
        self.complete = False

    def add_text(self, index: object, text: object) -> None:
        if isinstance(index, int) and isinstance(text, str) and text:
            self.parts.setdefault(index, []).append(text)

    def set_model(self, model: object) -> None:
        if isinstance(model, str) and model and not self.model:
            self.model = model

    def set_error(self, error: object) -> None:
        self.error = self.error or error_text(error)

    def reply(self, text: str) -> Reply:
        return Reply(
            text=text,
            model=self.model,
            usage=dict(self.usage),
            stop_reason=self.stop_reason,
            error=self.error,
            complete=self.complete,
        )

    def all_text(self) -> str:
        """Every index's text, joined in index order."""
        return "".join("".join(self.parts[i]) for i in sorted(self.parts))

    def first_text(self) -> str:
        """The text of the lowest index only (OpenAI `n > 1` choices are not merged)."""
        return "".join(self.parts[min(self.parts)]) if self.parts else ""


def with_io_tokens(usage: dict[str, int], input_key: str, output_key: str) -> dict[str, int]:
    """`usage` plus `input_tokens`/`output_tokens` copied from the upstream's own names."""
    out = dict(usage)
    if input_key in usage:
        out.setdefault("input_tokens", usage[input_key])
    if output_key in usage:
        out.setdefault("output_tokens", usage[output_key])
    return out


# --- Anthropic ----------------------------------------------------------------------------------


def _anthropic_message_start(state: _Assembler, event: dict[str, Any]) -> None:
    message = as_dict(event.get("message"))
    if message is not None:
        state.set_model(message.get("model"))
        state.usage.update(int_fields(message.get("usage")))


def _anthropic_block_start(state: _Assembler, event: dict[str, Any]) -> None:
    block = as_dict(event.get("content_block"))
    if str_field(block, "type") == "text":
        state.add_text(event.get("index"), str_field(block, "text"))


def _anthropic_block_delta(state: _Assembler, event: dict[str, Any]) -> None:
    delta = as_dict(event.get("delta"))
    if str_field(delta, "type") == "text_delta":
        state.add_text(event.get("index"), str_field(delta, "text"))


def _anthropic_message_delta(state: _Assembler, event: dict[str, Any]) -> None:
    state.stop_reason = str_field(as_dict(event.get("delta")), "stop_reason") or state.stop_reason
    state.usage.update(int_fields(event.get("usage")))  # cumulative: later values win


def _anthropic_message_stop(state: _Assembler, event: dict[str, Any]) -> None:
    state.complete = True


def _anthropic_error(state: _Assembler, event: dict[str, Any]) -> None:
    state.set_error(event.get("error") or "error")


_ANTHROPIC_HANDLERS = {
    "message_start": _anthropic_message_start,
    "content_block_start": _anthropic_block_start,
    "content_block_delta": _anthropic_block_delta,
    "message_delta": _anthropic_message_delta,
    "message_stop": _anthropic_message_stop,
    "error": _anthropic_error,
}


class AnthropicStream:
    """Anthropic Messages SSE: text deltas per block index, usage, stop reason, `event: error`."""

    def __init__(self) -> None:
        self._sse = SSEDecoder()
        self._state = _Assembler()

    def feed(self, chunk: bytes) -> None:
        """Consume the next chunk (any size, split anywhere)."""
        for event in self._sse.feed(chunk):
            self._handle(event)

    def finish(self) -> Reply:
        """Flush what is left and return the reply assembled so far."""
        for event in self._sse.flush():
            self._handle(event)
        return self._state.reply(self._state.all_text())

    def _handle(self, event: SSEEvent) -> None:
        data = as_dict(decode_json(event.data))
        if data is not None:
            handler = _ANTHROPIC_HANDLERS.get(str_field(data, "type") or event.event)
            if handler is not None:
                handler(self._state, data)


def parse_anthropic_response(body: bytes) -> Reply:
    """A non-streamed Messages response (`{"type": "message", ...}` or `{"type": "error", ...}`)."""
    state = _Assembler()
    data = as_dict(decode_json(body)) or {}
    if str_field(data, "type") == "error" or "error" in data:
        _anthropic_error(state, data)
    elif str_field(data, "type") == "message":
        _anthropic_message_start(state, {"message": data})
        for index, block in enumerate(as_list(data.get("content"))):
            _anthropic_block_start(state, {"index": index, "content_block": block})
        state.stop_reason = str_field(data, "stop_reason")
        state.complete = True
    return state.reply(state.all_text())


# --- OpenAI Chat Completions --------------------------------------------------------------------


def _openai_choices(state: _Assembler, choices: object, key: str) -> None:
    for choice in as_list(choices):
        found = as_dict(choice) or {}
        state.add_text(found.get("index", 0), str_field(as_dict(found.get(key)), "content"))
        if found.get("index", 0) == 0 and str_field(found, "finish_reason"):
            state.stop_reason = str_field(found, "finish_reason")


def _openai_chunk(state: _Assembler, chunk: dict[str, Any], key: str) -> None:
    if chunk.get("error") is not None:
        state.set_error(chunk["error"])
        return
    state.set_model(chunk.get("model"))
    _openai_choices(state, chunk.get("choices"), key)
    usage = _openai_usage(chunk.get("usage"))
    if usage:
        state.usage = usage


def _openai_usage(usage: object) -> dict[str, int]:
    counts = int_fields(usage)
    details = int_fields((as_dict(usage) or {}).get("prompt_tokens_details"))
    if counts and "cached_tokens" in details:
        counts["cache_read_input_tokens"] = details["cached_tokens"]  # Anthropic's name for it
    return with_io_tokens(counts, "prompt_tokens", "completion_tokens")


class OpenAIStream:
    """Chat Completions SSE: `delta.content` of choice 0, `[DONE]`, usage chunk, `{"error": ...}`."""

    def __init__(self) -> None:
        self._sse = SSEDecoder()
        self._state = _Assembler()

    def feed(self, chunk: bytes) -> None:
        """Consume the next chunk (any size, split anywhere)."""
        for event in self._sse.feed(chunk):
            self._handle(event)

    def finish(self) -> Reply:
        """Flush what is left and return the reply assembled so far."""
        for event in self._sse.flush():
            self._handle(event)
        return self._state.reply(self._state.first_text())

    def _handle(self, event: SSEEvent) -> None:
        if event.data.strip() == "[DONE]":
            self._state.complete = True
            return
        data = as_dict(decode_json(event.data))
        if data is not None:
            _openai_chunk(self._state, data, "delta")


def parse_openai_response(body: bytes) -> Reply:
    """A non-streamed `chat.completion` object (or an `{"error": ...}` body)."""
    state = _Assembler()
    data = as_dict(decode_json(body)) or {}
    _openai_chunk(state, data, "message")
    state.complete = not state.error and bool(as_list(data.get("choices")))
    return state.reply(state.first_text())


# --- Ollama ------------------------------------------------------------------------------------


def _ollama_usage(line: dict[str, Any]) -> dict[str, int]:
    counts = int_fields(line)
    return with_io_tokens(
        {k: counts[k] for k in ("prompt_eval_count", "eval_count") if k in counts},
        "prompt_eval_count",
        "eval_count",
    )


def _ollama_line(state: _Assembler, line: dict[str, Any]) -> None:
    if line.get("error") is not None:
        state.set_error(line["error"])
        return
    state.set_model(line.get("model"))
    message = as_dict(line.get("message"))
    state.add_text(0, str_field(message, "content") if message is not None else str_field(line, "response"))
    if line.get("done") is True:
        state.complete = True
        state.stop_reason = str_field(line, "done_reason") or state.stop_reason
        state.usage.update(_ollama_usage(line))


class OllamaStream:
    """Ollama NDJSON for /api/chat (`message.content`) and /api/generate (`response`)."""

    def __init__(self) -> None:
        self._lines = LineSplitter()
        self._state = _Assembler()

    def feed(self, chunk: bytes) -> None:
        """Consume the next chunk (any size, split anywhere)."""
        for line in self._lines.feed(chunk):
            self._handle(line)

    def finish(self) -> Reply:
        """Flush what is left and return the reply assembled so far."""
        for line in self._lines.flush():
            self._handle(line)
        return self._state.reply(self._state.all_text())

    def _handle(self, line: str) -> None:
        data = as_dict(decode_json(line)) if line.strip() else None
        if data is not None:
            _ollama_line(self._state, data)


def parse_ollama_response(body: bytes) -> Reply:
    """A non-streamed Ollama body: one JSON object (NDJSON with several lines also works)."""
    parser = OllamaStream()
    parser.feed(body)
    return parser.finish()


# --- dispatch by dialect name -------------------------------------------------------------------

_STREAMS: dict[str, type[AnthropicStream] | type[OpenAIStream] | type[OllamaStream]] = {
    "anthropic": AnthropicStream,
    "openai": OpenAIStream,
    "ollama_chat": OllamaStream,
    "ollama_generate": OllamaStream,
}

_RESPONSES = {
    "anthropic": parse_anthropic_response,
    "openai": parse_openai_response,
    "ollama_chat": parse_ollama_response,
    "ollama_generate": parse_ollama_response,
}


def stream_parser(dialect: str) -> StreamParser:
    """A fresh stream parser for a dialect name (see `tap.dialects.DIALECTS`)."""
    return _STREAMS[dialect]()


def parse_response(dialect: str, body: bytes) -> Reply:
    """Parse a whole non-streamed response body of a dialect."""
    return _RESPONSES[dialect](body)
