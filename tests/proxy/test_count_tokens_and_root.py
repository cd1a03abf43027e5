"""`/v1/messages/count_tokens` counts the block the real request gets; Ollama's `GET /` / `HEAD /` pass."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp

from testkit.upstreams import FakeAnthropic, FakeOllama
from tests.proxy.harness import TapProxy
from tests.sdk import sdk

if TYPE_CHECKING:
    import anthropic
else:
    anthropic = sdk("anthropic")

H = {"x-api-key": "sk-ant", "anthropic-version": "2023-06-01"}


async def post(url: str, payload: Any, headers: dict[str, str] | None = None) -> tuple[int, Any, Any]:
    async with aiohttp.ClientSession() as s, s.post(url, json=payload, headers={**H, **(headers or {})}) as r:
        return r.status, await r.json(), r.headers


def chat(*turns: str) -> list[dict[str, str]]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(turns)]


async def test_count_tokens_sends_the_same_block_as_the_request_it_counts(isolated_home: Path) -> None:
    async with FakeAnthropic() as up, TapProxy(isolated_home, anthropic=up.url) as tap:
        tap.remember("The user plays the cello in an orchestra")
        messages = chat("I have rehearsal tonight.", "Have fun!", "What instrument do I play, the cello?")
        count = {"model": "claude-haiku-4-5", "system": "Be brief.", "messages": messages}
        status, counted, headers = await post(tap.url + "/v1/messages/count_tokens", count)
        _, _, real_headers = await post(tap.url + "/v1/messages", {**count, "max_tokens": 64})
        await tap.settle()
    assert status == 200 and counted["input_tokens"] > 0
    assert headers["x-tap-recalled"] == "1" == real_headers["x-tap-recalled"]
    count_sent, real_sent = (r.json() for r in up.requests)
    assert [r.path for r in up.requests] == ["/v1/messages/count_tokens", "/v1/messages"]
    assert count_sent["messages"] == real_sent["messages"]  # the counted body is the one the model gets
    assert "cello" in count_sent["messages"][-1]["content"][-1]["text"]
    assert len(tap.events) == 1, "counting is not an exchange"


async def test_count_tokens_through_the_anthropic_sdk_and_without_memories(isolated_home: Path) -> None:
    async with FakeAnthropic() as up, TapProxy(isolated_home, anthropic=up.url) as tap:
        tap.remember("The user plays the cello")
        client = anthropic.AsyncAnthropic(base_url=tap.url, api_key="sk-ant", max_retries=0)
        counted = await client.messages.count_tokens(
            model="claude-haiku-4-5", messages=[{"role": "user", "content": "Which instrument, cello?"}]
        )
        plain = await client.messages.count_tokens(
            model="claude-haiku-4-5",
            messages=[{"role": "user", "content": "Which instrument, cello?"}],
            extra_headers={"x-tap-no-memory": "1"},
        )
        await client.close()
    assert counted.input_tokens > plain.input_tokens  # the fake counts bytes/4: the block is in the count
    assert up.requests[1].json()["messages"][0]["content"] == "Which instrument, cello?"
    assert tap.events == []


async def test_count_tokens_upstream_errors_keep_the_dialect_shape(isolated_home: Path) -> None:
    async with FakeAnthropic() as up, TapProxy(isolated_home, anthropic=up.url) as tap:
        up.next_response(status=429)
        status, body, _ = await post(tap.url + "/v1/messages/count_tokens", {"model": "m", "messages": chat("hi")})
    assert status == 429 and body["type"] == "error" and body["error"]["type"] == "rate_limit_error"


async def test_ollama_root_get_and_head_pass_through(isolated_home: Path) -> None:
    async with FakeOllama() as up, TapProxy(isolated_home, ollama=up.url) as tap, aiohttp.ClientSession() as s:
        async with s.get(tap.url + "/") as r:
            got = (r.status, await r.text(), r.headers["Content-Type"])
        async with s.head(tap.url + "/") as r:
            head = (r.status, await r.read(), r.headers.get("Content-Length"))
    assert got == (200, "Ollama is running", "text/plain")
    assert head == (200, b"", str(len("Ollama is running")))
    assert [(r.method, r.path) for r in up.requests] == [("GET", "/"), ("HEAD", "/")]


async def test_ollama_root_when_ollama_is_down_is_a_502_in_ollamas_shape(isolated_home: Path) -> None:
    async with TapProxy(isolated_home, ollama="http://127.0.0.1:9") as tap, aiohttp.ClientSession() as s:
        async with s.get(tap.url + "/") as r:
            status, body = r.status, json.loads(await r.read())
    assert status == 502 and "unreachable" in body["error"]
