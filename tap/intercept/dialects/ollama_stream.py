"""Ollama responses: NDJSON lines of /api/chat (`message.content`) and /api/generate (`response`).

One JSON object per line (docs/protocols.md, Ollama); the line with `"done": true` is terminal and carries
`done_reason` and the counts (`prompt_eval_count`, `eval_count`, reported also as
`input_tokens`/`output_tokens`); `{"error": "..."}` lines are errors. A non-streamed body is one
such object, so it goes through the same parser. Invariants: see tap.intercept.dialects.wire.
"""

from __future__ import annotations

from typing import Any

from tap.intercept.dialects.common import as_dict, int_fields, str_field
from tap.intercept.dialects.wire import Assembler, LineSplitter, Reply, decode_json, with_io_tokens


def _usage(line: dict[str, Any]) -> dict[str, int]:
    counts = int_fields(line)
    return with_io_tokens(
        {k: counts[k] for k in ("prompt_eval_count", "eval_count") if k in counts},
        "prompt_eval_count",
        "eval_count",
    )


def _line(state: Assembler, line: dict[str, Any]) -> None:
    if line.get("error") is not None:
        state.set_error(line["error"])
        return
    state.set_model(line.get("model"))
    message = as_dict(line.get("message"))
    state.add_text(0, str_field(message, "content") if message is not None else str_field(line, "response"))
    if line.get("done") is True:
        state.complete = True
        state.stop_reason = str_field(line, "done_reason") or state.stop_reason
        state.usage.update(_usage(line))


class OllamaStream:
    """Ollama NDJSON for /api/chat (`message.content`) and /api/generate (`response`)."""

    def __init__(self) -> None:
        self._lines = LineSplitter()
        self._state = Assembler()

    @property
    def complete(self) -> bool:
        """True once the `"done": true` line was fed."""
        return self._state.complete

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
            _line(self._state, data)


def parse_ollama_response(body: bytes) -> Reply:
    """A non-streamed Ollama body: one JSON object (NDJSON with several lines also works)."""
    parser = OllamaStream()
    parser.feed(body)
    return parser.finish()
