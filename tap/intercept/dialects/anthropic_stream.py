"""Anthropic Messages responses: the SSE stream and the whole JSON body, reassembled into a `Reply`.

Events (docs/protocols.md, Anthropic Messages): `message_start` (model, first usage), `content_block_start` /
`content_block_delta` (`text_delta` only counts as text) per block index, `message_delta` (stop
reason, cumulative usage: later values win), `message_stop` (terminal), `event: error`
(mid-stream errors). Text is joined per block index in index order with no separator (citations
split one answer into several consecutive text blocks). Invariants: see tap.intercept.dialects.wire.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tap.intercept.dialects.common import as_dict, as_list, int_fields, str_field
from tap.intercept.dialects.wire import Assembler, Reply, SSEEvent, SSEParser, decode_json


def _message_start(state: Assembler, event: dict[str, Any]) -> None:
    message = as_dict(event.get("message"))
    if message is not None:
        state.set_model(message.get("model"))
        state.usage.update(int_fields(message.get("usage")))


def _block_start(state: Assembler, event: dict[str, Any]) -> None:
    block = as_dict(event.get("content_block"))
    if str_field(block, "type") == "text":
        state.add_text(event.get("index"), str_field(block, "text"))


def _block_delta(state: Assembler, event: dict[str, Any]) -> None:
    delta = as_dict(event.get("delta"))
    if str_field(delta, "type") == "text_delta":
        state.add_text(event.get("index"), str_field(delta, "text"))


def _message_delta(state: Assembler, event: dict[str, Any]) -> None:
    state.stop_reason = str_field(as_dict(event.get("delta")), "stop_reason") or state.stop_reason
    state.usage.update(int_fields(event.get("usage")))  # cumulative: later values win


def _message_stop(state: Assembler, event: dict[str, Any]) -> None:
    state.complete = True


def _error(state: Assembler, event: dict[str, Any]) -> None:
    state.set_error(event.get("error") or "error")


_HANDLERS: dict[str, Callable[[Assembler, dict[str, Any]], None]] = {
    "message_start": _message_start,
    "content_block_start": _block_start,
    "content_block_delta": _block_delta,
    "message_delta": _message_delta,
    "message_stop": _message_stop,
    "error": _error,
}


class AnthropicStream(SSEParser):
    """Anthropic Messages SSE: text deltas per block index, usage, stop reason, `event: error`."""

    def handle(self, event: SSEEvent) -> None:
        """Apply one event (by its JSON `type`, else its SSE name)."""
        data = as_dict(decode_json(event.data))
        if data is not None:
            handler = _HANDLERS.get(str_field(data, "type") or event.event)
            if handler is not None:
                handler(self.state, data)


def parse_anthropic_response(body: bytes) -> Reply:
    """A non-streamed Messages response (`{"type": "message", ...}` or `{"type": "error", ...}`)."""
    state = Assembler()
    data = as_dict(decode_json(body)) or {}
    if str_field(data, "type") == "error" or "error" in data:
        _error(state, data)
    elif str_field(data, "type") == "message":
        _message_start(state, {"message": data})
        for index, block in enumerate(as_list(data.get("content"))):
            _block_start(state, {"index": index, "content_block": block})
        state.stop_reason = str_field(data, "stop_reason")
        state.complete = True
    return state.reply(state.all_text())
