"""Wire pieces every dialect's tee parser shares: lines, server-sent events, the reply assembler.

The proxy forwards upstream bytes unchanged and feeds a *copy* of the same chunks to the
dialect's stream parser (`Dialect.stream_parser()`); `finish()` returns a `Reply`.  The parsers
themselves live next to their dialect (`anthropic_stream`, `openai_stream`,
`openai_responses_stream`, `ollama_stream`); `tee.ReplyTee` picks the right one for a response.

Invariants (of this module and of every parser built on it):
- `feed` and `finish` never raise on bad input: an event that is not valid JSON, or has
  unexpected shapes, contributes nothing and parsing carries on;
- linear time: bytes are split on b"\\n" as they arrive and only the unfinished last line is
  kept, as a list of pieces joined once its newline arrives (so a huge line fed one byte at a
  time is still O(total bytes));
- lines are split *before* UTF-8 decoding (0x0A never occurs inside a multi-byte sequence), so a
  chunk boundary mid-character or between "\\r" and "\\n" cannot corrupt the text;
- only visible answer text counts: tool-use JSON, tool-call arguments, thinking and refusals are
  not text;
- `usage` always uses `input_tokens`/`output_tokens` when the upstream reported usage, plus the
  upstream's own integer fields (e.g. `cache_read_input_tokens`, `prompt_tokens`);
- `complete` is True only once the format's terminal event arrived (`message_stop`,
  `data: [DONE]`, `"done": true`; a whole, well-formed body for a whole-response parser); a
  parser's `complete` property turns True as soon as that event was fed, so the proxy can act on
  the finished reply before the last chunk reaches the client.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

import msgspec

from tap.intercept.dialects.common import as_dict, str_field


class Reply(msgspec.Struct, kw_only=True):
    """The assistant's side of one exchange, as reassembled from the upstream response."""

    text: str = ""
    model: str = ""
    usage: dict[str, int] = msgspec.field(default_factory=dict)
    stop_reason: str = ""
    error: str = ""
    complete: bool = False
    response_id: str = ""
    """The upstream's id for this reply when a later request may refer to it (the Responses API's
    `previous_response_id`); "" otherwise."""


class StreamParser(Protocol):
    """An incremental parser fed a copy of the response bytes."""

    @property
    def complete(self) -> bool:
        """True once the format's terminal event was fed."""
        ...

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


class Assembler:
    """Reply state shared by the parsers: text fragments per index, model, usage, errors."""

    def __init__(self) -> None:
        self.parts: dict[int, list[str]] = {}
        self.model = ""
        self.usage: dict[str, int] = {}
        self.stop_reason = ""
        self.error = ""
        self.complete = False
        self.response_id = ""

    def add_text(self, index: object, text: object) -> None:
        """Append a text fragment to the block (or choice) at `index`."""
        if isinstance(index, int) and isinstance(text, str) and text:
            self.parts.setdefault(index, []).append(text)

    def set_model(self, model: object) -> None:
        """Keep the first model name reported."""
        if isinstance(model, str) and model and not self.model:
            self.model = model

    def set_error(self, error: object) -> None:
        """Keep the first error reported."""
        self.error = self.error or error_text(error)

    def reply(self, text: str) -> Reply:
        """The assembled reply with `text` as its answer."""
        return Reply(
            text=text,
            model=self.model,
            usage=dict(self.usage),
            stop_reason=self.stop_reason,
            error=self.error,
            complete=self.complete,
            response_id=self.response_id,
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


class SSEParser:
    """Base of the SSE parsers: decode events, hand each to `handle`, assemble the reply."""

    def __init__(self) -> None:
        self._sse = SSEDecoder()
        self.state = Assembler()

    @property
    def complete(self) -> bool:
        """True once the terminal event was fed."""
        return self.state.complete

    def feed(self, chunk: bytes) -> None:
        """Consume the next chunk (any size, split anywhere)."""
        for event in self._sse.feed(chunk):
            self.handle(event)

    def finish(self) -> Reply:
        """Flush what is left and return the reply assembled so far."""
        for event in self._sse.flush():
            self.handle(event)
        return self.state.reply(self.text())

    def handle(self, event: SSEEvent) -> None:
        """Apply one event (overridden per format)."""

    def text(self) -> str:
        """The answer text (every index, in order, unless overridden)."""
        return self.state.all_text()
