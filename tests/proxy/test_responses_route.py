"""OpenAI Responses API through tap: the real openai SDK and raw bytes against a fake upstream."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp

from tap.intercept.dialects import OPENAI_RESPONSES
from testkit.upstreams import FakeOpenAI, load_transcript
from tests.proxy.harness import TapProxy
from tests.sdk import sdk

if TYPE_CHECKING:
    import openai
else:
    openai = sdk("openai")

REPLY = "Paint it teal — a calm colour for Zürich 🎨."


async def raw_post(url: str, data: bytes, headers: dict[str, str] | None = None) -> tuple[int, bytes, Any]:
    async with aiohttp.ClientSession() as s, s.post(url, data=data, headers=headers or {}) as r:
        return r.status, await r.read(), r.headers


def response_body(response_id: str, text: str) -> bytes:
    """A whole `response` object with this id and text."""
    body = json.loads(load_transcript("openai_response.json"))
    body["id"] = response_id
    body["output"][0]["content"][0]["text"] = text
    return json.dumps(body).encode()


def tool_call_body(response_id: str) -> bytes:
    body = json.loads(load_transcript("openai_response.json"))
    body["id"] = response_id
    body["output"] = [
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "weather", "arguments": "{}"}
    ]
    return json.dumps(body).encode()


async def test_stream_bytes_are_identical_and_the_block_is_in_the_newest_user_item(isolated_home: Path) -> None:
    async with FakeOpenAI() as up, TapProxy(isolated_home, openai=up.url) as tap:
        tap.remember("The user's favourite colour is teal", scope="ann")
        payload = {
            "model": "gpt-5.1",
            "instructions": "Be brief.",
            "stream": True,
            "input": [
                {"role": "user", "content": "Hi, I am Ann."},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hello Ann!"}]},
                {"role": "user", "content": [{"type": "input_text", "text": "Which colour for the door, teal?"}]},
            ],
        }
        raw = json.dumps(payload).encode()
        status, body, headers = await raw_post(
            tap.url + "/v1/responses", raw, {"Authorization": "Bearer sk-o", "x-tap-scope": "ann"}
        )
        await tap.settle()
        assert tap.turn_log is not None
        (exchange,) = tap.turn_log.recent()
    assert status == 200 and body == load_transcript("openai_responses.sse")
    assert headers["x-tap-recalled"] == "1" and "x-tap-degraded" not in headers
    sent = up.requests[0]
    assert sent.path == "/v1/responses" and sent.headers["Authorization"] == "Bearer sk-o"
    forwarded = sent.json()
    assert forwarded["instructions"] == "Be brief." and forwarded["input"][:2] == payload["input"][:2]
    parts = forwarded["input"][2]["content"]
    assert parts[0] == payload["input"][2]["content"][0] and "favourite colour is teal" in parts[1]["text"]
    (event,) = tap.events
    assert [m.role for m in event.messages] == ["user", "assistant"]
    assert event.messages[0].content == "Which colour for the door, teal?" and event.messages[1].content == REPLY
    assert exchange.dialect == "openai_responses" and exchange.usage["input_tokens"] == 52 and exchange.complete


async def test_openai_sdk_responses_streamed_and_not(isolated_home: Path) -> None:
    async with FakeOpenAI() as up, TapProxy(isolated_home, openai=up.url) as tap:
        tap.remember("The user lives in Zürich")
        client = openai.AsyncOpenAI(base_url=tap.url + "/v1", api_key="sk-o", max_retries=0)
        whole = await client.responses.create(model="gpt-5.1", input="Where do I live, Zürich?")
        stream = await client.responses.create(model="gpt-5.1", input="And the weather in Zürich?", stream=True)
        kinds, pieces = [], []
        async for event in stream:
            kinds.append(event.type)
            if event.type == "response.output_text.delta":
                pieces.append(event.delta)
        await client.close()
        await tap.settle()
    assert whole.output_text == REPLY and "".join(pieces) == REPLY
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    first = up.requests[0].json()["input"]
    assert first[0]["content"][0] == {"type": "input_text", "text": "Where do I live, Zürich?"}
    assert "lives in Zürich" in first[0]["content"][1]["text"]
    assert [len(e.messages) for e in tap.events] == [2, 2]


async def test_previous_response_id_chain_keeps_the_conversation_and_the_turns_block(isolated_home: Path) -> None:
    async with FakeOpenAI() as up, TapProxy(isolated_home, openai=up.url) as tap:
        tap.remember("The user's cat is called Miso")
        url = tap.url + "/v1/responses"
        up.next_response(body=tool_call_body("resp_a"))
        await raw_post(url, json.dumps({"model": "m", "input": "What is my cat called? Miso?"}).encode())
        step = {"type": "function_call_output", "call_id": "call_1", "output": "no data"}
        up.next_response(body=response_body("resp_b", "Your cat is Miso."))
        _, _, step_headers = await raw_post(
            url, json.dumps({"model": "m", "previous_response_id": "resp_a", "input": [step]}).encode()
        )
        up.next_response(body=response_body("resp_c", "Miso is a fine name."))
        await raw_post(url, json.dumps({"model": "m", "previous_response_id": "resp_b", "input": "Thanks!"}).encode())
        await tap.settle()
    first, second, third = (r.json()["input"] for r in up.requests)
    block = first[0]["content"][1]["text"]
    assert "Miso" in block and step_headers["x-tap-recalled"] == "1"
    assert second[0] == step and second[1]["content"] == [{"type": "input_text", "text": block}]  # same bytes
    assert third == "Thanks!" or third[0]["content"][0]["text"] == "Thanks!"
    conversations = {e.conversation for e in tap.events}
    assert len(conversations) == 1, "the chain is one conversation"
    turns = [(m.role, m.content, m.id) for e in tap.events for m in e.messages]  # captured in any order
    assert sorted(t[:2] for t in turns) == sorted(
        [
            ("user", "What is my cat called? Miso?"),
            ("assistant", "Your cat is Miso."),
            ("user", "Thanks!"),
            ("assistant", "Miso is a fine name."),
        ]
    )
    assert len({t[2] for t in turns}) == 4, "every turn has its own id"


async def test_malformed_bodies(isolated_home: Path) -> None:
    async with FakeOpenAI() as up, TapProxy(isolated_home, openai=up.url) as tap:
        status, body, headers = await raw_post(tap.url + "/v1/responses", b'{"model": "m", "input": ')
        assert status == 400 and headers["x-tap-degraded"] == "unparsable-request"
        assert up.requests[0].body == b'{"model": "m", "input": '  # forwarded untouched; the API answers
        assert json.loads(body)["error"]["type"] == "invalid_request_error"
        bad_scope = {"x-tap-scope": "a" * 5000}
        status, body, _ = await raw_post(tap.url + "/v1/responses", b'{"input": "hi"}', bad_scope)
        assert status == 400 and set(json.loads(body)["error"]) == {"message", "type", "param", "code"}
        assert len(up.requests) == 1  # tap answered itself
        odd = json.dumps({"model": "m", "input": 42}).encode()
        status, _, headers = await raw_post(tap.url + "/v1/responses", odd)
        assert status == 200 and headers["x-tap-recalled"] == "0" and up.requests[-1].body == odd


async def test_upstream_down_is_a_502_in_openais_shape(isolated_home: Path) -> None:
    async with TapProxy(isolated_home, openai="http://127.0.0.1:9") as tap:
        status, body, _ = await raw_post(tap.url + "/v1/responses", b'{"model": "m", "input": "hi"}')
    assert status == 502
    error = json.loads(body)["error"]
    assert error["type"] == "server_error" and "unreachable" in error["message"]
    assert OPENAI_RESPONSES.error_body(502, error["message"])[0] == body
