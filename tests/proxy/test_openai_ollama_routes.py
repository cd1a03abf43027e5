"""OpenAI Chat Completions and Ollama through tap: real SDKs and raw bytes, fake upstreams."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp
import ollama

from tap.intercept.dialects import get_dialect
from testkit.upstreams import FakeOllama, FakeOpenAI, load_transcript
from tests.proxy.harness import TapProxy
from tests.sdk import sdk

if TYPE_CHECKING:
    import openai
else:
    openai = sdk("openai")


async def raw_post(url: str, payload: Any, headers: dict[str, str] | None = None) -> tuple[int, bytes, Any]:
    async with aiohttp.ClientSession() as s, s.post(url, json=payload, headers=headers or {}) as r:
        return r.status, await r.read(), r.headers


def reply_text(dialect: str, transcript: str) -> str:
    parser = get_dialect(dialect).stream_parser()
    parser.feed(load_transcript(transcript))
    return parser.finish().text


async def test_openai_stream_bytes_injection_capture(isolated_home: Path) -> None:
    async with FakeOpenAI() as up, TapProxy(isolated_home, openai=up.url) as tap:
        tap.remember("The user's favourite colour is teal", scope="ann")
        payload = {
            "model": "gpt-4o",
            "stream": True,
            "stream_options": {"include_usage": True},
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "What colour should I paint the door? teal?"},
            ],
        }
        status, raw, headers = await raw_post(
            tap.url + "/v1/chat/completions",
            payload,
            {"Authorization": "Bearer sk-openai", "x-tap-scope": "ann", "OpenAI-Organization": "org-1"},
        )
        await tap.settle()
    assert status == 200 and raw == load_transcript("openai_stream.sse")
    assert headers["x-tap-recalled"] == "1"
    sent = up.requests[0]
    assert sent.headers["Authorization"] == "Bearer sk-openai" and sent.headers["OpenAI-Organization"] == "org-1"
    assert "x-tap-scope" not in sent.headers
    body = sent.json()
    assert body["messages"][0] == payload["messages"][0]
    parts = body["messages"][1]["content"]
    assert parts[0] == {"type": "text", "text": payload["messages"][1]["content"]} and "teal" in parts[1]["text"]
    assert body["stream_options"] == {"include_usage": True}
    (event,) = tap.events
    assert event.scope == "ann" and event.messages[1].content == reply_text("openai", "openai_stream.sse")


async def test_openai_sdk_streaming_and_not(isolated_home: Path) -> None:
    async with FakeOpenAI() as up, TapProxy(isolated_home, openai=up.url) as tap:
        client = openai.AsyncOpenAI(base_url=tap.url + "/v1", api_key="sk-openai", max_retries=0)
        completion = await client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "hello there"}]
        )
        stream = await client.chat.completions.create(
            model="gpt-4o",
            stream=True,
            stream_options={"include_usage": True},
            messages=[{"role": "user", "content": "and again"}],
        )
        pieces = [c.choices[0].delta.content or "" async for c in stream if c.choices]
        models = await client.models.list()
        await client.close()
        await tap.settle()
    assert completion.choices[0].message.content
    assert "".join(pieces) == reply_text("openai", "openai_stream.sse")
    assert [m.id for m in models.data] == ["gpt-4o-2024-08-06"]
    assert [r.path for r in up.requests] == ["/v1/chat/completions", "/v1/chat/completions", "/v1/models"]
    assert len(tap.events) == 2


async def test_ollama_chat_and_generate_with_the_ollama_client(isolated_home: Path) -> None:
    async with FakeOllama() as up, TapProxy(isolated_home, ollama=up.url) as tap:
        tap.remember("The user is learning Portuguese")
        client = ollama.AsyncClient(host=tap.url)
        streamed = "".join(
            [
                part.message.content or ""
                async for part in await client.chat(
                    model="llama3.2",
                    messages=[{"role": "user", "content": "Which language am I learning? Portuguese?"}],
                    stream=True,
                )
            ]
        )
        whole = await client.chat(
            model="llama3.2", stream=False, messages=[{"role": "user", "content": "Portuguese verbs?"}]
        )
        generated = await client.generate(model="llama3.2", prompt="Say something in Portuguese", stream=False)
        tags = await client.list()
        await tap.settle()
    assert streamed == reply_text("ollama_chat", "ollama_chat.ndjson")
    assert whole.message.content and generated.response
    assert [m.model for m in tags.models] == ["llama3.2:latest"]
    chat, chat2, gen, _ = up.requests
    assert chat.json()["messages"][-1]["content"].startswith("Which language am I learning? Portuguese?\n\n")
    assert "learning Portuguese" in chat.json()["messages"][-1]["content"]
    assert gen.json()["prompt"].startswith("Say something in Portuguese\n\n")
    assert len(tap.events) == 3 and all(len(e.messages) == 2 for e in tap.events)


async def test_ollama_ndjson_bytes_pass_unchanged(isolated_home: Path) -> None:
    async with FakeOllama() as up, TapProxy(isolated_home, ollama=up.url) as tap:
        status, raw, headers = await raw_post(tap.url + "/api/generate", {"model": "m", "prompt": "hi"})
    assert status == 200 and raw == load_transcript("ollama_generate.ndjson")
    assert headers["Content-Type"].startswith("application/x-ndjson")
    assert json.loads(up.requests[0].body) == {"model": "m", "prompt": "hi"}  # nothing relevant: unchanged
