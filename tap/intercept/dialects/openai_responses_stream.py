"""OpenAI Responses API replies: the SSE event stream and the whole `response` object, as a `Reply`.

Stream (docs/protocols.md, OpenAI Responses; openai-python `types/responses/response_stream_event.py`): named events
whose JSON `type` repeats the name — `response.created` / `response.in_progress` (the `response`
object: id, model), `response.output_text.delta` (`output_index`, `content_index`, `delta`),
and one terminal event carrying the final `response` object with its `usage`:
`response.completed`, `response.incomplete` (`incomplete_details.reason`, e.g. the output limit)
or `response.failed` (`response.error`); `error` events (`message` at the top level) report
failures.  There is no `data: [DONE]` line for this API.

Text is the `output_text` of every output message, in (output index, content index) order, joined
with no separator (refusals, reasoning summaries and tool-call arguments are not text).  When a
stream carried no text deltas, the terminal event's `response.output` supplies the text.  Cached
prompt tokens (`input_tokens_details.cached_tokens`) are also reported under Anthropic's name
`cache_read_input_tokens`.  The reply's `response_id` is the response's `id`, which a later
request may name as `previous_response_id`.  Invariants: see tap.intercept.dialects.wire.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tap.intercept.dialects.common import as_dict, as_list, int_fields, str_field
from tap.intercept.dialects.wire import Assembler, Reply, SSEEvent, SSEParser, decode_json, with_io_tokens

_PARTS_PER_ITEM = 1 << 16
"""Text fragments are keyed by output_index * _PARTS_PER_ITEM + content_index (ordered by both)."""


def text_index(output_index: object, content_index: object) -> int | None:
    """The assembler index of one output text part, or None when the indexes are not integers."""
    if not isinstance(output_index, int) or not isinstance(content_index, int):
        return None
    return output_index * _PARTS_PER_ITEM + min(max(content_index, 0), _PARTS_PER_ITEM - 1)


def usage_of(usage: object) -> dict[str, int]:
    """A Responses `usage` object as integer counts (`input_tokens`, `output_tokens`, ...)."""
    counts = int_fields(usage)
    details = int_fields((as_dict(usage) or {}).get("input_tokens_details"))
    if counts and "cached_tokens" in details:
        counts["cache_read_input_tokens"] = details["cached_tokens"]  # Anthropic's name for it
    return with_io_tokens(counts, "input_tokens", "output_tokens")


def _response_header(state: Assembler, response: dict[str, Any]) -> None:
    state.set_model(response.get("model"))
    state.response_id = state.response_id or str_field(response, "id")


def _output_text(state: Assembler, output: object) -> None:
    """Add the text of a finished response's `output` items (only when no delta was seen)."""
    if state.parts:
        return
    for out_index, item in enumerate(as_list(output)):
        found = as_dict(item) or {}
        if str_field(found, "type") != "message":
            continue
        for part_index, part in enumerate(as_list(found.get("content"))):
            if str_field(as_dict(part), "type") == "output_text":
                state.add_text(text_index(out_index, part_index), str_field(as_dict(part), "text"))


def _final(state: Assembler, response: dict[str, Any]) -> None:
    """The terminal `response` object: id, model, usage, status, error, text fallback."""
    _response_header(state, response)
    usage = usage_of(response.get("usage"))
    if usage:
        state.usage = usage
    _output_text(state, response.get("output"))
    reason = str_field(as_dict(response.get("incomplete_details")), "reason")
    state.stop_reason = reason or str_field(response, "status") or state.stop_reason
    if response.get("error") is not None:
        state.set_error(response["error"])


def _created(state: Assembler, event: dict[str, Any]) -> None:
    _response_header(state, as_dict(event.get("response")) or {})


def _delta(state: Assembler, event: dict[str, Any]) -> None:
    state.add_text(text_index(event.get("output_index"), event.get("content_index")), event.get("delta"))


def _terminal(state: Assembler, event: dict[str, Any]) -> None:
    _final(state, as_dict(event.get("response")) or {})
    if str_field(event, "type") == "response.failed" and not state.error:
        state.set_error("the response failed")
    state.complete = True


def _error(state: Assembler, event: dict[str, Any]) -> None:
    state.set_error(event)


_HANDLERS: dict[str, Callable[[Assembler, dict[str, Any]], None]] = {
    "response.created": _created,
    "response.in_progress": _created,
    "response.queued": _created,
    "response.output_text.delta": _delta,
    "response.completed": _terminal,
    "response.incomplete": _terminal,
    "response.failed": _terminal,
    "error": _error,
}


class ResponsesStream(SSEParser):
    """Responses SSE: output text deltas, the terminal response object, `error` events."""

    def handle(self, event: SSEEvent) -> None:
        """Apply one event (by its JSON `type`, else its SSE name)."""
        data = as_dict(decode_json(event.data))
        if data is None:
            return
        handler = _HANDLERS.get(str_field(data, "type") or event.event)
        if handler is not None:
            if not str_field(data, "type"):
                data = {**data, "type": event.event}
            handler(self.state, data)


def parse_responses_response(body: bytes) -> Reply:
    """A non-streamed `response` object (or an `{"error": ...}` body)."""
    state = Assembler()
    data = as_dict(decode_json(body)) or {}
    if str_field(data, "object") == "response" or "output" in data:
        _final(state, data)
        status = str_field(data, "status")
        state.complete = not state.error and status in ("completed", "incomplete", "")
    elif data.get("error") is not None:
        state.set_error(data["error"])
    return state.reply(state.all_text())
