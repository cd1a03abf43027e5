"""Anthropic Messages through tap: real SDK and raw HTTP against a fake upstream on loopback.

Each test checks the three things a proxy promises: the client got exactly the upstream's
bytes, the upstream saw the memory block in the right place and nothing else changed, and
capture produced the right exchange.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp

from tap.intercept.dialects import get_dialect
from testkit.upstreams import FakeAnthropic, load_transcript
from tests.proxy.harness import TapProxy
from tests.sdk import sdk

if TYPE_CHECKING:
    import anthropic
else:
    anthropic = sdk("anthropic")

HEADERS = {
    "x-api-key": "sk-ant-test-123",
    "anthropic-version": "2023-06-01",
    "content-type": "application/json",
}


def body(messages: list[Any], **extra: Any) -> dict[str, Any]:
    return {"model": "claude-sonnet-4-5", "max_tokens": 256, "messages": messages, **extra}


async def post(url: str, payload: Any, headers: dict[str, str] | None = None) -> tuple[int, bytes, Any]:
    async with (
        aiohttp.ClientSession() as s,
        s.post(url, data=json.dumps(payload).encode(), headers=headers or HEADERS) as r,
    ):
        return r.status, await r.read(), r.headers


async def test_streaming_bytes_injection_and_capture(isolated_home: Path) -> None:
    async with FakeAnthropic() as up, TapProxy(isolated_home, anthropic=up.url) as tap:
        tap.remember("The user's cat is called Miso", importance=4)
        history = [
            {
                "role": "user",
                "content": [{"type": "text", "text": "Hi", "cache_control": {"type": "ephemeral"}}],
            },
            {"role": "assistant", "content": "Hello!"},
            {"role": "user", "content": "What is my cat called?"},
        ]
        payload = body(history, stream=True, system=[{"type": "text", "text": "Be kind."}], tools=[])
        status, raw, headers = await post(tap.url + "/v1/messages", payload)
        await tap.settle()
        assert tap.turn_log is not None
        (logged,) = tap.turn_log.recent()
    assert status == 200
    assert raw == load_transcript("anthropic_stream.sse")
    assert headers["x-tap-recalled"] == "1" and float(headers["x-tap-recall-ms"]) >= 0
    sent = up.requests[0].json()
    assert {k: v for k, v in sent.items() if k != "messages"} == {k: v for k, v in payload.items() if k != "messages"}
    assert sent["messages"][:2] == history[:2]
    last = sent["messages"][2]["content"]
    assert last[0] == {"type": "text", "text": "What is my cat called?"}
    assert len(last) == 2 and "Miso" in last[1]["text"] and "cache_control" not in last[1]
    (event,) = tap.events
    assert event.source == "proxy" and event.scope == "default"
    assert [m.role for m in event.messages] == ["user", "assistant"]
    assert event.messages[0].content == "What is my cat called?"
    expected = get_dialect("anthropic").stream_parser()
    expected.feed(load_transcript("anthropic_stream.sse"))
    reply = expected.finish()
    assert reply.text and event.messages[1].content == reply.text
    assert (logged.user_text, logged.reply_text, logged.usage) == (
        "What is my cat called?",
        reply.text,
        reply.usage,
    )
    assert logged.complete and logged.model and logged.status == 200
    assert "sk-ant-test-123" not in tap.turn_log_path.read_bytes().decode("latin-1")


async def test_sdk_streaming_and_not(isolated_home: Path) -> None:
    async with FakeAnthropic() as up, TapProxy(isolated_home, anthropic=up.url) as tap:
        tap.remember("The user lives in Lisbon")
        client = anthropic.AsyncAnthropic(base_url=tap.url, api_key="sk-ant-sdk", max_retries=0)
        message = await client.messages.create(
            model="claude-sonnet-4-6",
            max_tokens=64,
            messages=[{"role": "user", "content": "Where do I live?"}],
        )
        async with client.messages.stream(
            model="claude-sonnet-4-6",
            max_tokens=64,
            messages=[{"role": "user", "content": "Where do I live now?"}],
        ) as s:
            streamed = "".join([t async for t in s.text_stream])
        await client.close()
        await tap.settle()
    direct = json.loads(load_transcript("anthropic_message.json"))
    assert message.id == direct["id"] and message.content[0].type == direct["content"][0]["type"]
    assert streamed.startswith("Bonjour")
    for request in up.requests:
        assert "sk-ant-sdk" in request.headers.get("x-api-key", "") + request.headers.get("authorization", "")
        assert "Lisbon" in request.json()["messages"][-1]["content"][-1]["text"]
    assert [e.messages[0].content for e in tap.events] == ["Where do I live?", "Where do I live now?"]
    assert all(len(e.messages) == 2 and e.messages[1].content for e in tap.events)
