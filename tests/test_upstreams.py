"""Self-test of the loopback fake upstreams: the real SDKs work against them, streaming and not.

Proxy and provider tests rely on these fakes behaving like the real APIs as far as the SDKs can
tell, on the scripted failure modes (error status, hang, dropped connection, a held answer) actually
happening, on the Anthropic fake's header checks, and on testkit/wire.py's streams reassembling.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import aiohttp
import ollama
import pytest

from testkit.upstreams import FakeAnthropic, FakeOllama, FakeOpenAI, load_transcript
from testkit.waits import until
from testkit.wire import anthropic_message, anthropic_stream
from tests.sdk import sdk

if TYPE_CHECKING:
    import anthropic
    import openai
else:
    anthropic = sdk("anthropic")
    openai = sdk("openai")

TEXT = "Bonjour ! Le café est prêt — 日本語のテキスト and emoji 🎉🙂👩\u200d💻. Let me check the weather.\n"
USER: Any = [{"role": "user", "content": "Quel temps fait-il à Zürich ?"}]


def anthropic_client(url: str, **kw: Any) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(base_url=url, api_key="sk-test", max_retries=0, **kw)


async def test_anthropic_sdk_streams_text_thinking_and_tool_use() -> None:
    async with FakeAnthropic() as up:
        client = anthropic_client(up.url)
        async with client.messages.stream(model="claude-haiku-4-5", max_tokens=64, messages=USER) as stream:
            streamed = "".join([t async for t in stream.text_stream])
            final = await stream.get_final_message()
        await client.close()
    assert streamed == TEXT
    assert [b.type for b in final.content] == ["thinking", "text", "tool_use"]
    tool = final.content[2]
    assert isinstance(tool, anthropic.types.ToolUseBlock)
    assert tool.input == {"location": "Zürich, CH", "unit": "celsius"}
    assert final.usage.output_tokens == 89 and final.usage.cache_read_input_tokens == 2048
    assert final.stop_reason == "tool_use"
    (req,) = up.requests
    assert (req.method, req.path) == ("POST", "/v1/messages")
    assert "sk-test" in req.headers.get("x-api-key", "") + req.headers.get("Authorization", "")
    assert "anthropic-version" in req.headers
    assert req.json()["stream"] is True and req.json()["messages"] == USER


async def test_anthropic_sdk_non_streaming_count_tokens_and_models() -> None:
    async with FakeAnthropic() as up:
        client = anthropic_client(up.url)
        message = await client.messages.create(model="claude-haiku-4-5", max_tokens=64, messages=USER)
        counted = await client.messages.count_tokens(model="claude-haiku-4-5", messages=USER)
        models = [m.id async for m in client.models.list()]
        await client.close()
    assert "".join(b.text for b in message.content if b.type == "text") == TEXT
    assert counted.input_tokens > 0
    assert models == ["claude-sonnet-4-5-20250929"]
    assert [r.path for r in up.requests] == ["/v1/messages", "/v1/messages/count_tokens", "/v1/models"]


async def test_anthropic_sdk_sees_scripted_error_status_and_mid_stream_error() -> None:
    async with FakeAnthropic() as up:
        client = anthropic_client(up.url)
        up.next_response(status=529)
        with pytest.raises(anthropic.APIStatusError) as info:
            await client.messages.create(model="m", max_tokens=8, messages=USER)
        assert info.value.status_code == 529
        body: Any = info.value.body
        assert body["error"]["type"] == "overloaded_error"
        up.next_response(transcript="anthropic_error.sse")
        with pytest.raises(anthropic.APIStatusError, match="Overloaded"):
            stream = await client.messages.create(model="m", max_tokens=8, messages=USER, stream=True)
            async for _ in stream:
                pass
        await client.close()


async def test_hang_times_out_and_drop_truncates() -> None:
    async with FakeAnthropic() as up:
        client = anthropic_client(up.url, timeout=0.3)
        up.next_response(hang=True)
        with pytest.raises(anthropic.APITimeoutError):
            await client.messages.create(model="m", max_tokens=8, messages=USER)
        await client.close()
        up.next_response(transcript="anthropic_stream.sse", drop_after=700)
        async with aiohttp.ClientSession() as session:
            async with session.post(f"{up.url}/v1/messages", json={"stream": True}) as resp:
                with pytest.raises(aiohttp.ClientPayloadError):
                    await resp.read()


async def test_hang_after_delivers_part_of_the_body_then_stalls() -> None:
    async with FakeOllama() as up:
        up.next_response(transcript="ollama_chat.ndjson", hang_after=200)
        timeout = aiohttp.ClientTimeout(sock_read=0.3)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            async with session.post(f"{up.url}/api/chat", json={}) as resp:
                first = await resp.content.readexactly(200)
                with pytest.raises(TimeoutError):
                    await resp.content.read(1)
    assert first == load_transcript("ollama_chat.ndjson")[:200]


async def test_streamed_bytes_are_the_transcript_exactly() -> None:
    async with FakeOpenAI(delay=0.0005) as up, aiohttp.ClientSession() as session:
        async with session.post(f"{up.url}/v1/chat/completions", json={"stream": True}) as resp:
            body = await resp.read()
            assert resp.headers["Content-Type"].startswith("text/event-stream")
    assert body == load_transcript("openai_stream.sse")


async def test_openai_sdk_streaming_and_not() -> None:
    async with FakeOpenAI() as up:
        client = openai.AsyncOpenAI(base_url=f"{up.url}/v1", api_key="sk-test", max_retries=0)
        stream = await client.chat.completions.create(
            model="gpt-4o",
            messages=USER,
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = [c async for c in stream]
        completion = await client.chat.completions.create(model="gpt-4o", messages=USER)
        models = [m.id async for m in client.models.list()]
        await client.close()
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == TEXT
    args = "".join(
        tc.function.arguments or ""
        for c in chunks
        if c.choices
        for tc in c.choices[0].delta.tool_calls or []
        if tc.function is not None
    )
    assert args == '{"location":"Zürich, CH"}'
    assert chunks[-1].usage is not None and chunks[-1].usage.prompt_tokens == 512
    assert completion.choices[0].message.content == TEXT
    assert models == ["gpt-4o-2024-08-06"]
    assert up.requests[0].headers["Authorization"] == "Bearer sk-test"


async def test_openai_sdk_raises_on_mid_stream_error() -> None:
    async with FakeOpenAI() as up:
        client = openai.AsyncOpenAI(base_url=f"{up.url}/v1", api_key="sk-test", max_retries=0)
        up.next_response(transcript="openai_error.sse")
        with pytest.raises(openai.APIError, match="server had an error"):
            async for _ in await client.chat.completions.create(model="m", messages=USER, stream=True):
                pass
        await client.close()


async def test_ollama_client_chat_generate_and_list() -> None:
    async with FakeOllama() as up:
        client = ollama.AsyncClient(host=up.url)
        parts = [p async for p in await client.chat(model="qwen3:8b", messages=USER, stream=True)]
        whole = await client.chat(model="qwen3:8b", messages=USER, stream=False)
        gen = "".join(
            [p.response or "" async for p in await client.generate(model="llama3.2", prompt="hi", stream=True)]
        )
        listed = await client.list()
        await client.close()
    assert "".join(p.message.content or "" for p in parts) == TEXT
    assert parts[-1].done and parts[-1].eval_count == 282
    assert whole.message.content == TEXT
    assert gen == TEXT
    assert [m.model for m in listed.models] == ["llama3.2:latest"]
    assert [r.path for r in up.requests] == ["/api/chat", "/api/chat", "/api/generate", "/api/tags"]
    assert up.requests[1].json()["stream"] is False


async def test_ollama_client_raises_on_error_line_and_status() -> None:
    async with FakeOllama() as up:
        client = ollama.AsyncClient(host=up.url)
        up.next_response(transcript="ollama_error.ndjson")
        with pytest.raises(ollama.ResponseError, match="unexpected EOF"):
            async for _ in await client.chat(model="llama3.2", messages=USER, stream=True):
                pass
        up.next_response(status=404, body=b'{"error":"model \\"nope\\" not found, try pulling it first"}')
        with pytest.raises(ollama.ResponseError) as info:
            await client.chat(model="nope", messages=USER, stream=False)
        await client.close()
    assert info.value.status_code == 404 and "not found" in info.value.error


async def test_unknown_paths_are_recorded_and_answered_404() -> None:
    async with FakeOpenAI() as up, aiohttp.ClientSession() as session:
        async with session.get(f"{up.url}/v1/nope?x=1", headers={"X-Probe": "1"}) as resp:
            assert resp.status == 404
            assert (await resp.json())["error"]["type"] == "invalid_request_error"
    assert up.requests[0].path == "/v1/nope" and up.requests[0].query == "x=1"
    assert up.requests[0].headers["x-probe"] == "1"


async def test_a_wire_built_stream_reassembles_to_its_message() -> None:
    text = {"type": "text", "text": "Bonjour, Zürich 🎉 "}
    tool = {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"city": "Zürich"}}
    message = anthropic_message([text, tool], model="claude-haiku-4-5", usage={"output_tokens": 9})
    async with FakeAnthropic() as up:
        client = anthropic_client(up.url)
        up.next_response(body=b"".join(anthropic_stream(message)), content_type="text/event-stream")
        async with client.messages.stream(model="m", max_tokens=64, messages=USER) as stream:
            final = await stream.get_final_message()
        await client.close()
    assert [block.model_dump(exclude_none=True) for block in final.content] == [text, tool]
    assert (final.id, final.model, final.stop_reason) == ("msg_fake01", "claude-haiku-4-5", "tool_use")
    assert final.usage.output_tokens == 9
    pieces = ["Bonjour, ", "Zürich ", "🎉 "]
    events = anthropic_stream(anthropic_message([text], stop_reason="end_turn"), pieces=pieces, ping=True)
    assert b"".join(events).count(b"content_block_delta\n") == 3 and b"event: ping" in events[2]
    with pytest.raises(ValueError, match="join"):
        anthropic_stream(anthropic_message([text]), pieces=["Bonjour"])


async def test_anthropic_checks_key_and_version_and_echoes_the_model() -> None:
    async with FakeAnthropic(api_key="sk-right") as up:
        wrong = anthropic.AsyncAnthropic(base_url=up.url, api_key="sk-wrong", max_retries=0)
        with pytest.raises(anthropic.AuthenticationError):
            await wrong.messages.create(model="m", max_tokens=8, messages=USER)
        await wrong.close()
        async with aiohttp.ClientSession() as session:
            async with session.post(f"{up.url}/v1/messages", json={}, headers={"x-api-key": "sk-right"}) as resp:
                assert resp.status == 400 and "anthropic-version" in (await resp.json())["error"]["message"]
        right = anthropic.AsyncAnthropic(base_url=up.url, api_key="sk-right", max_retries=0)
        up.reply_tool("gate_verdict", {"worth": True})
        message = await right.messages.create(model="claude-haiku-4-5", max_tokens=8, messages=USER)
        await right.close()
    assert message.model == "claude-haiku-4-5" and message.stop_reason == "tool_use"
    assert isinstance(message.content[0], anthropic.types.ToolUseBlock) and message.content[0].input == {"worth": True}
    assert len(up.requests) == 3  # the refused ones are recorded too


async def test_a_held_answer_waits_for_its_event() -> None:
    held = asyncio.Event()
    async with FakeOllama() as up, aiohttp.ClientSession() as session:
        up.reply_content("late", hold=held)

        async def ask() -> Any:
            async with session.post(f"{up.url}/api/chat", json={"stream": False}) as resp:
                return await resp.json()

        answer = asyncio.create_task(ask())
        await until(lambda: len(up.requests) == 1, what="the request")
        assert not answer.done()
        held.set()
        assert (await answer)["message"]["content"] == "late"
