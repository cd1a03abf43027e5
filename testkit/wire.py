"""The LLM wire formats the fakes speak, built from plain values: SSE events, the Anthropic
Messages API's messages, streams and errors (docs/protocols.md), and OpenAI chat completions and
errors.

One builder for every fake: the loopback upstreams in testkit/upstreams/, the agent-loop fakes in
tests/proxy/loop_upstreams.py and the benchmark's separate-process upstream (bench/fake_upstream.py).
It imports only the standard library, so the benchmark's upstream process still starts fast.

    events = anthropic_stream(anthropic_message([{"type": "text", "text": "Hi"}], stop_reason="end_turn"))
    body = b"".join(events)                      # one SSE stream that reassembles to the message
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

ANTHROPIC_ERROR_KINDS = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    429: "rate_limit_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def compact(value: Any) -> str:
    """JSON without spaces, as the real APIs send it."""
    return json.dumps(value, separators=(",", ":"))


def sse(event: str, data: Any) -> bytes:
    """One server-sent event: `event:` and `data:` lines and the blank line that ends it."""
    return f"event: {event}\ndata: {compact(data)}\n\n".encode()


def anthropic_message(
    content: list[dict[str, Any]],
    *,
    usage: dict[str, int] | None = None,
    stop_reason: str = "tool_use",
    model: str = "",
    message_id: str = "msg_fake01",
) -> dict[str, Any]:
    """A non-streamed Messages API response (usage counts default to a plausible request's)."""
    counts = {"input_tokens": 812, "output_tokens": 96, "cache_creation_input_tokens": 0}
    counts |= {"cache_read_input_tokens": 0, **(usage or {})}
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": counts,
    }


def openai_completion(
    content: str | None,
    *,
    tool_calls: list[tuple[str, str]] | None = None,
    finish_reason: str = "stop",
    usage: dict[str, Any] | None = None,
    model: str = "local-model",
    refusal: str | None = None,
) -> dict[str, Any]:
    """A non-streamed chat completion: the message's content, its (name, arguments) function calls,
    and usage (plausible counts unless given; `{}` leaves usage out, as some servers do)."""
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": refusal}
    if tool_calls:
        message["tool_calls"] = [
            {"id": f"call_fake{i}", "type": "function", "function": {"name": name, "arguments": arguments}}
            for i, (name, arguments) in enumerate(tool_calls)
        ]
    answer: dict[str, Any] = {
        "id": "chatcmpl-fake01",
        "object": "chat.completion",
        "created": 1761000000,
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}],
    }
    counts = {"prompt_tokens": 700, "completion_tokens": 90, "total_tokens": 790} if usage is None else usage
    if counts:
        answer["usage"] = counts
    return answer


def openai_error(message: str, kind: str = "invalid_request_error", code: str | None = None) -> dict[str, Any]:
    """An error body in the OpenAI API's shape."""
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def anthropic_error(kind: str, message: str, request_id: str = "req_fake") -> dict[str, Any]:
    """An error body in the Messages API's shape."""
    return {"type": "error", "error": {"type": kind, "message": message}, "request_id": request_id}


def anthropic_stream(
    message: dict[str, Any], *, pieces: Sequence[str] | None = None, ping: bool = False
) -> list[bytes]:
    """The SSE events of a Messages stream that reassembles to `message`, one event per item.

    message_start carries the message without content (output_tokens 1), each block opens, gets
    its deltas (a text block all of its text in one delta, or the `pieces` given, which must join
    to it; a tool_use block its input as one input_json_delta) and closes, then message_delta carries the
    stop reason and the output tokens, then message_stop. `ping` puts a ping after the first block
    opens, as the API does.
    """
    usage = message.get("usage") or {}
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None}
    start["usage"] = {**usage, "output_tokens": 1}
    events = [sse("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            opening: dict[str, Any] = {"type": "text", "text": ""}
            texts = [block["text"]] if pieces is None else list(pieces)
            if "".join(texts) != block["text"]:
                raise ValueError("the pieces must join to the text block's text")
            deltas = [{"type": "text_delta", "text": text} for text in texts]
        else:
            opening = {**block, "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": json.dumps(block["input"])}]
        events.append(
            sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": opening})
        )
        if ping and index == 0:
            events.append(sse("ping", {"type": "ping"}))
        events += [
            sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
            for delta in deltas
        ]
        events.append(sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    end = {"stop_reason": message["stop_reason"], "stop_sequence": message.get("stop_sequence")}
    output = {"output_tokens": usage.get("output_tokens", 1)}
    events += [
        sse("message_delta", {"type": "message_delta", "delta": end, "usage": output}),
        sse("message_stop", {"type": "message_stop"}),
    ]
    return events
