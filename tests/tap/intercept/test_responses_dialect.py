"""The OpenAI Responses dialect: turns, cache-safe injection, client ids, and its reply parsers."""

from __future__ import annotations

import copy
import json
from typing import Any

import msgspec
import pytest

from tap.intercept.dialects import OPENAI_RESPONSES, HumanTurn, PlainMessage, memory_dialect
from tap.intercept.dialects.openai_responses_stream import ResponsesStream, parse_responses_response
from testkit.upstreams import AWKWARD_CHUNKS, chunks, load_transcript

R = OPENAI_RESPONSES
BLOCK = "<recalled-memories>\n- the user lives in Zürich\n</recalled-memories>"
REPLY = "Paint it teal — a calm colour for Zürich 🎨."


def user(text: str, **extra: Any) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "input_text", "text": text}], **extra}


def said_reply(text: str) -> list[dict[str, Any]]:
    """The items a reply comes back as in the next request (reasoning, message, tool call)."""
    return [
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"},
        {
            "type": "message",
            "role": "assistant",
            "id": "msg_1",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        },
        {"type": "function_call", "call_id": "call_1", "name": "weather", "arguments": '{"city":"Zürich"}'},
    ]


def test_registry_routes_responses() -> None:
    assert memory_dialect("/v1/responses") is R
    assert R.name == "openai_responses" and R.upstream == "openai" and not R.is_streaming({})


def test_string_input_is_one_user_turn_and_instructions_are_the_system_prompt() -> None:
    req = {"model": "gpt-5.1", "instructions": "Be brief.", "input": "Which colour for the door?"}
    assert R.transcript(req) == [PlainMessage("user", "Which colour for the door?")]
    assert R.system_text(req) == "Be brief."
    assert R.human_turn(req) == HumanTurn(0, "Which colour for the door?", tool_step=False)


def test_items_merge_one_reply_into_one_assistant_turn_with_the_streamed_text() -> None:
    req = {
        "input": [
            {"role": "developer", "content": "Use tools."},
            user("hello", type="message"),
            *said_reply("Let me check. "),
            {"type": "function_call_output", "call_id": "call_1", "output": "12 °C"},
        ]
    }
    assert R.transcript(req) == [
        PlainMessage("system", "Use tools."),
        PlainMessage("user", "hello"),
        PlainMessage("assistant", "Let me check. "),
        PlainMessage("tool", "", "[function_call_output call_1]12 °C"),
    ]
    assert R.human_turn(req) == HumanTurn(1, "hello", tool_step=True)
    assert R.latest_user_text(req) is None


def test_user_markers_and_malformed_items() -> None:
    image = {"type": "input_image", "image_url": "data:,"}
    req = {"input": [{"role": "user", "content": [{"type": "input_text", "text": "look"}, image]}]}
    assert R.transcript(req) == [PlainMessage("user", "look", "[input_image]")]
    assert R.transcript({"input": [None, {"role": "robot", "content": "x"}]}) == [
        PlainMessage("", ""),
        PlainMessage("", ""),
    ]
    assert R.transcript({"input": 42}) == [] and R.human_turn({"input": 42}) is None
    assert R.human_turn({"input": [user("hi"), *said_reply("sure")[:2]]}) is None  # ends with the assistant


def test_inject_string_input_keeps_the_original_text_as_its_first_part() -> None:
    req = {"model": "m", "instructions": "Be brief.", "input": "Which colour?", "stream": True}
    out = R.inject(req, BLOCK)
    assert out["input"] == [
        {
            "role": "user",
            "content": [{"type": "input_text", "text": "Which colour?"}, {"type": "input_text", "text": BLOCK}],
        }
    ]
    assert {k: v for k, v in out.items() if k != "input"} == {k: v for k, v in req.items() if k != "input"}
    assert req["input"] == "Which colour?"  # the input is not changed


def test_inject_appends_to_the_newest_user_item_only_and_shares_the_rest() -> None:
    first = user("first question")
    breakpoint_part = {"type": "input_text", "text": "second", "prompt_cache_breakpoint": {"type": "ephemeral"}}
    last = {"role": "user", "type": "message", "content": [breakpoint_part]}
    req = {"input": [first, *said_reply("ok"), {"type": "function_call_output", "call_id": "c", "output": "x"}, last]}
    before = copy.deepcopy(req)
    out = R.inject(req, BLOCK)
    assert req == before
    assert out["input"][:-1] == req["input"][:-1] and out["input"][0] is first
    assert out["input"][-1] == {**last, "content": [breakpoint_part, {"type": "input_text", "text": BLOCK}]}
    string_content = {"input": [{"role": "user", "content": "plain"}]}
    assert R.inject(string_content, BLOCK)["input"][-1]["content"] == [
        {"type": "input_text", "text": "plain"},
        {"type": "input_text", "text": BLOCK},
    ]


def test_inject_after_tool_outputs_is_a_new_user_message() -> None:
    outputs = [
        {"type": "function_call_output", "call_id": "call_1", "output": "12 °C"},
        {"type": "custom_tool_call_output", "call_id": "call_2", "output": [{"type": "input_text", "text": "ok"}]},
    ]
    req = {"previous_response_id": "resp_1", "input": outputs}
    out = R.inject(req, BLOCK)
    assert out["input"][:2] == outputs
    assert out["input"][2] == {"type": "message", "role": "user", "content": [{"type": "input_text", "text": BLOCK}]}


def test_inject_passes_over_trailing_developer_items() -> None:
    developer = {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "d"}]}
    out = R.inject({"input": [user("hi"), developer]}, BLOCK)
    assert out["input"][1] is developer
    assert out["input"][0]["content"][-1] == {"type": "input_text", "text": BLOCK}
    output = {"type": "function_call_output", "call_id": "c", "output": "x"}
    step = R.inject({"input": [user("hi"), output, developer]}, BLOCK)
    assert step["input"][1:] == [
        output,
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": BLOCK}]},
        developer,
    ]


@pytest.mark.parametrize("req", [{"input": [user("hi"), *said_reply("prefill")[:2]]}, {"input": []}, {}])
def test_inject_refuses_without_a_user_item_or_tool_output_last(req: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="not a user message"):
        R.inject(req, BLOCK)
    with pytest.raises(ValueError, match="empty"):
        R.inject({"input": "hi"}, "  ")


def test_client_ids() -> None:
    ids = R.client_ids({"previous_response_id": "resp_9", "user": "u1", "prompt_cache_key": "k"})
    assert ids.follows == "resp_9" and ids.discriminator == "user=u1&prompt_cache_key=k" and not ids.session
    conv = R.client_ids({"conversation": {"id": "conv_7"}})
    assert conv.session == conv.thread == "conv_7" and not conv.follows
    assert R.client_ids({"conversation": "conv_8"}).thread == "conv_8"


def test_error_body_is_openais_shape() -> None:
    body, kind = R.error_body(400, "bad input")
    assert kind == "application/json"
    assert json.loads(body) == {
        "error": {"message": "bad input", "type": "invalid_request_error", "param": None, "code": None}
    }
    assert json.loads(R.error_body(502, "down")[0])["error"]["type"] == "server_error"


def test_stream_parser_in_awkward_chunks() -> None:
    raw = load_transcript("openai_responses.sse")
    parser = R.stream_parser()
    complete_at = None
    for i, piece in enumerate(chunks(raw, AWKWARD_CHUNKS)):
        parser.feed(piece)
        if parser.complete and complete_at is None:
            complete_at = i
    reply = parser.finish()
    assert reply.text == REPLY and reply.complete and not reply.error
    assert reply.model == "gpt-5.1-2025-11-13" and reply.response_id == "resp_fake_0001"
    assert reply.usage["input_tokens"] == 52 and reply.usage["output_tokens"] == 14
    assert reply.usage["cache_read_input_tokens"] == 0 and reply.stop_reason == "completed"
    assert complete_at is not None


def test_stream_errors_and_failed_responses() -> None:
    parser = ResponsesStream()
    parser.feed(load_transcript("openai_responses_error.sse"))
    reply = parser.finish()
    assert reply.text == "Partial" and reply.error.startswith("The server had an error") and reply.complete


def test_stream_without_deltas_takes_the_text_of_the_final_response() -> None:
    final = json.loads(load_transcript("openai_response.json"))
    event = {
        "type": "response.incomplete",
        "response": {**final, "incomplete_details": {"reason": "max_output_tokens"}},
    }
    parser = ResponsesStream()
    parser.feed(f"event: response.incomplete\ndata: {json.dumps(event)}\n\n".encode())
    reply = parser.finish()
    assert reply.text == REPLY and reply.complete and reply.stop_reason == "max_output_tokens"


def test_whole_response_and_error_bodies() -> None:
    reply = parse_responses_response(load_transcript("openai_response.json"))
    assert reply.text == REPLY and reply.complete and reply.response_id == "resp_fake_0001"
    assert reply.usage["output_tokens"] == 14
    error = parse_responses_response(msgspec.json.encode({"error": {"message": "nope", "type": "x"}}))
    assert error.error == "nope" and not error.complete
    assert parse_responses_response(b"not json") == parse_responses_response(b"{}")
