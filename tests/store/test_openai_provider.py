"""The OpenAI-compatible provider (store.llm.openai_provider) against a fake OpenAI-compatible server on
loopback (testkit/upstreams/openai.py) speaking the real wire format: structured output through
`response_format`, the fallbacks for servers without it, malformed answers and HTTP errors.

The provider is synchronous; each test runs the fake in its own event loop and calls the provider
through `asyncio.to_thread`, as the extraction worker does.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from datetime import UTC, datetime
from typing import Any

import pytest

from store.llm import OpenAICompatibleProvider, make_llm_provider
from tap.candidates import CandidateMemory
from tap.config import ExtractConfig, parse_config
from tap.ingest.chunker import Chunk, Turn, render_chunk
from tap.llm import Decision, ProviderCallError, Usage, cost_usd
from tap.llm.prices import openai_price_for
from tap.records import make_memory
from testkit.upstreams import FakeOpenAI

pytestmark = pytest.mark.xdist_group("sdk")  # the provider imports the openai SDK (tests/sdk.py)

KEY = "sk-local-test-0123456789"
MARCH_9 = datetime(2026, 3, 9, 18, 0, tzinfo=UTC).timestamp()


def extract_config(**keys: object) -> ExtractConfig:
    lines = [f"{key} = {json.dumps(value)}" for key, value in keys.items()]
    return parse_config("[extract]\n" + "\n".join(lines)).extract


def local(fake: FakeOpenAI, **keys: object) -> OpenAICompatibleProvider:
    settings: dict[str, object] = {"provider": "openai", "openai_url": fake.url + "/v1", "openai_model": "qwen-test"}
    return OpenAICompatibleProvider(extract_config(**(settings | keys)))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.fixture
def chunk() -> Chunk:
    turns = [
        Turn(id="t1", role="user", speaker="User", text="I'm back in Aarhus since Monday.", timestamp=MARCH_9),
        Turn(id="t2", role="assistant", speaker="Assistant", text="Welcome back!", timestamp=MARCH_9),
    ]
    return Chunk(id="c_1", scope="default", conversation="conv-1", source="proxy", turns=turns, tokens=30)


def memory(**changes: Any) -> dict[str, Any]:
    item: dict[str, Any] = {"content": "The user lives in Aarhus.", "kind": "fact", "importance": 4, "tags": []}
    item |= {"turn_ids": ["t1"], "holder": "user", "attribute": "residence", "value": "Aarhus", "change": "update"}
    return {**item, **changes}


async def failure(call: Any, *args: Any) -> ProviderCallError:
    with pytest.raises(ProviderCallError) as caught:
        await asyncio.to_thread(call, *args)
    return caught.value


# --- structured output ------------------------------------------------------------------------------


async def test_gate_asks_for_a_json_schema_answer_and_sends_no_key(chunk: Chunk) -> None:
    async with FakeOpenAI() as fake:
        fake.reply_content({"worth": True, "reason": "a move"}, usage={"prompt_tokens": 420, "completion_tokens": 12})
        verdict, usage = await asyncio.to_thread(local(fake).gate, render_chunk(chunk))
    assert verdict.worth is True and verdict.reason == "a move"
    assert usage == Usage(provider="openai-compatible", model="qwen-test", input_tokens=420, output_tokens=12)
    assert cost_usd(usage) == 0.0  # a server other than OpenAI's is not priced
    sent = fake.requests[-1]
    assert sent.path == "/v1/chat/completions" and "authorization" not in sent.headers
    body = sent.json()
    assert body["model"] == "qwen-test" and body["stream"] is False and body["temperature"] == 0.0
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert render_chunk(chunk) in body["messages"][1]["content"]
    schema = body["response_format"]
    assert schema["type"] == "json_schema" and schema["json_schema"]["name"] == "gate_verdict"
    assert schema["json_schema"]["strict"] is True
    assert schema["json_schema"]["schema"]["required"] == ["worth", "reason"]
    assert schema["json_schema"]["schema"]["additionalProperties"] is False
    assert "tools" not in body and "max_tokens" not in body


async def test_extract_returns_annotated_candidates_with_the_key_sent(
    chunk: Chunk, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TAP_TEST_OPENAI_KEY", KEY)
    async with FakeOpenAI() as fake:
        usage = {"prompt_tokens": 900, "completion_tokens": 80, "prompt_tokens_details": {"cached_tokens": 600}}
        fake.reply_content({"memories": [memory()]}, usage=usage)
        provider = local(fake, openai_api_key_env="TAP_TEST_OPENAI_KEY")
        found, spent = await asyncio.to_thread(provider.extract, chunk, [])
    assert found == [
        CandidateMemory(
            content="The user lives in Aarhus.",
            kind="fact",
            importance=4,
            tags=["update"],
            turn_ids=["t1"],
            valid_from=MARCH_9,
            slot="user|residence",
            slot_value="aarhus",
            holder="user",
        )
    ]
    assert (spent.input_tokens, spent.cache_read_tokens, spent.output_tokens) == (300, 600, 80)
    sent = fake.requests[-1]
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    items = sent.json()["response_format"]["json_schema"]["schema"]["properties"]["memories"]["items"]
    assert items["properties"]["turn_ids"]["items"]["enum"] == ["t1", "t2"]
    assert set(items["required"]) >= {"holder", "attribute", "value", "change", "retracts", "happened_on"}


async def test_reconcile_decides_every_candidate_and_needs_no_call_for_none() -> None:
    stored = make_memory(scope="default", content="The user lives in Ljubljana.", valid_from=MARCH_9 - 86400)
    new = CandidateMemory(
        content="The user lives in Aarhus.", kind="fact", importance=4, tags=[], turn_ids=["t1"], valid_from=MARCH_9
    )
    async with FakeOpenAI() as fake:
        decision = {"candidate": 0, "action": "supersede", "target": stored.id, "content": ""}
        fake.reply_content({"decisions": [decision]})
        provider = local(fake)
        decisions, _ = await asyncio.to_thread(provider.reconcile, [new], [[stored]])
        nothing, usage = await asyncio.to_thread(provider.reconcile, [], [])
    assert decisions == [Decision(action="supersede", candidate=0, target=stored.id)]
    assert nothing == [] and usage.input_tokens == 0 and len(fake.requests) == 1


# --- servers without json_schema ------------------------------------------------------------------


async def test_a_server_without_json_schema_is_asked_with_a_forced_tool_call_from_then_on(
    chunk: Chunk, caplog: pytest.LogCaptureFixture
) -> None:
    async with FakeOpenAI(refuse={"json_schema"}) as fake:
        fake.reply_tool_call("record_memories", {"memories": [memory()]})
        fake.reply_tool_call("gate_verdict", {"worth": False, "reason": "small talk"})
        provider = local(fake)
        with caplog.at_level(logging.WARNING, logger="store.llm.openai_provider"):
            found, _ = await asyncio.to_thread(provider.extract, chunk, [])
            verdict, _ = await asyncio.to_thread(provider.gate, "[t1] User: hi")
    assert [m.slot for m in found] == ["user|residence"] and verdict.worth is False
    assert provider.mode == "tools"
    refused, asked, second = (r.json() for r in fake.requests)
    assert refused["response_format"]["type"] == "json_schema"
    assert "response_format" not in asked and asked["tool_choice"] == {
        "type": "function",
        "function": {"name": "record_memories"},
    }
    assert asked["tools"][0]["function"]["parameters"]["properties"]["memories"]
    assert "response_format" not in second and second["tools"][0]["function"]["name"] == "gate_verdict"
    assert len(fake.requests) == 3  # the refused mode is not asked again
    assert "does not take a json_schema request; asking with tools" in caplog.text


async def test_a_server_with_neither_gets_the_schema_in_the_prompt_and_may_wrap_its_answer(chunk: Chunk) -> None:
    async with FakeOpenAI(refuse={"json_schema", "tools"}) as fake:
        wrapped = (
            "<think>the user moved</think>\nHere you go:\n```json\n" + json.dumps({"memories": [memory()]}) + "\n```"
        )
        fake.reply_content(wrapped)
        provider = local(fake)
        found, _ = await asyncio.to_thread(provider.extract, chunk, [])
    assert [m.content for m in found] == ["The user lives in Aarhus."] and provider.mode == "json"
    last = fake.requests[-1].json()
    assert "response_format" not in last and "tools" not in last
    assert "matching this JSON schema" in last["messages"][0]["content"]
    assert '"happened_on"' in last["messages"][0]["content"]


async def test_a_tool_call_answered_in_text_is_read_as_well(chunk: Chunk) -> None:
    async with FakeOpenAI() as fake:
        fake.reply_content(json.dumps({"memories": []}), finish_reason="stop")
        found, _ = await asyncio.to_thread(local(fake, openai_output="tools").extract, chunk, [])
    assert found == [] and fake.requests[-1].json()["tool_choice"]["function"]["name"] == "record_memories"


async def test_an_error_that_is_not_about_the_format_is_raised_after_every_mode(chunk: Chunk) -> None:
    async with FakeOpenAI() as fake:
        for _ in range(3):
            fake.reply_error(400, "the request exceeds the available context size")
        provider = local(fake)
        error = await failure(provider.extract, chunk, [])
    assert error.retryable is False and "HTTP 400: the request exceeds the available context size" in str(error)
    assert len(fake.requests) == 3 and provider.mode == "json_schema"  # no mode was taken


# --- malformed answers -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "reason", "retryable", "billed"),
    [
        ("Sorry, I can't produce JSON today.", "answered with text that is not JSON", True, True),
        ({"memories": [memory(turn_ids=["t9"])]}, "'t9' is not a turn of this chunk", True, True),
        ({"memories": [memory(value="")]}, "memories[0].value: attribute 'residence' needs its value", True, True),
        ({"memories": [memory(importance="4")]}, "Expected int, got str - at $.memories[0].importance", True, True),
        ({"memories": [memory(happened_on="last week")]}, "is not a YYYY-MM-DD date", True, True),
        ([1, 2], "Expected object, got array", True, True),
    ],
)
async def test_malformed_answers_are_retryable_and_billed(
    chunk: Chunk, answer: Any, reason: str, retryable: bool, billed: bool
) -> None:
    async with FakeOpenAI() as fake:
        fake.reply_content(answer)
        error = await failure(local(fake).extract, chunk, [])
    assert error.retryable is retryable and reason in str(error)
    assert (error.usage is not None) is billed and "qwen-test" in str(error)


async def test_a_body_that_is_no_chat_completion_is_retryable(chunk: Chunk) -> None:
    async with FakeOpenAI() as fake:
        fake.reply(body="<html>502 Bad Gateway</html>")
        fake.reply(body={"object": "chat.completion", "choices": []})
        first = await failure(local(fake).extract, chunk, [])
        second = await failure(local(fake).extract, chunk, [])
    assert first.retryable is True and "malformed chat completion" in str(first) and "Bad Gateway" in str(first)
    assert second.retryable is True and "without a message" in str(second)


@pytest.mark.parametrize(
    ("completion", "reason"),
    [
        ({"finish_reason": "length"}, "length limit"),
        ({"finish_reason": "content_filter"}, "content filter"),
        ({"refusal": "I can't help with that."}, "refused to answer"),
    ],
)
async def test_final_answers_are_not_retryable(chunk: Chunk, completion: dict[str, Any], reason: str) -> None:
    async with FakeOpenAI() as fake:
        fake.reply_content('{"memories": [', **completion)
        error = await failure(local(fake).extract, chunk, [])
    assert error.retryable is False and reason in str(error) and error.usage is not None


# --- HTTP errors -------------------------------------------------------------------------------------


async def test_rate_limits_and_server_errors_are_retryable_with_the_hint() -> None:
    async with FakeOpenAI() as fake:
        fake.reply_error(429, "Rate limit reached", kind="rate_limit_error", headers={"retry-after": "7"})
        fake.reply_error(503, "Loading model", kind="unavailable_error")
        provider = local(fake)
        limited = await failure(provider.gate, "[t1] User: hi")
        loading = await failure(provider.gate, "[t1] User: hi")
    assert limited.retryable is True and limited.retry_after == 7.0 and "HTTP 429: Rate limit reached" in str(limited)
    assert loading.retryable is True and "HTTP 503: Loading model" in str(loading)
    assert len(fake.requests) == 2  # the SDK does not retry on its own


async def test_a_bad_key_is_not_retryable_names_the_variable_and_never_shows_the_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TAP_TEST_OPENAI_KEY", KEY)
    async with FakeOpenAI() as fake:
        fake.reply_error(401, f"Incorrect API key provided: {KEY}", kind="invalid_api_key")
        error = await failure(local(fake, openai_api_key_env="TAP_TEST_OPENAI_KEY").gate, "[t1] User: hi")
    assert error.retryable is False and "HTTP 401" in str(error) and "$TAP_TEST_OPENAI_KEY" in str(error)
    assert KEY not in str(error) and "[redacted]" in str(error)


async def test_an_unknown_model_is_not_retryable_and_says_what_to_check() -> None:
    async with FakeOpenAI() as fake:
        fake.reply_error(404, "The model `qwen-test` does not exist", kind="not_found_error")
        error = await failure(local(fake).gate, "[t1] User: hi")
    assert error.retryable is False and "does not exist" in str(error) and "end in /v1" in str(error)


async def test_connection_refused_and_timeouts_are_retryable() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    refused = await failure(
        OpenAICompatibleProvider(extract_config(provider="openai", openai_url=url, openai_model="m")).gate,
        "[t1] User: hi",
    )
    assert refused.retryable is True and url in str(refused) and "not reachable" in str(refused)
    async with FakeOpenAI() as fake:
        fake.reply_content({"worth": True, "reason": "late"}, latency=3.0)
        late = await failure(local(fake, timeout_s=0.2).gate, "[t1] User: hi")
    assert late.retryable is True and "timed out after 0.2s" in str(late)


# --- configuration and prices -----------------------------------------------------------------------


async def test_modes_and_sampling_from_the_config(chunk: Chunk) -> None:
    async with FakeOpenAI() as fake:
        fake.reply_content({"worth": True, "reason": "x"})
        await asyncio.to_thread(local(fake, openai_output="json", openai_temperature=-1).gate, "[t1] User: hi")
    body = fake.requests[-1].json()
    assert "response_format" not in body and "temperature" not in body and "tools" not in body


def test_make_llm_provider_and_the_required_model() -> None:
    cfg = extract_config(provider="openai", gate="heuristic", openai_model="llama-3.1-8b")
    assert isinstance(make_llm_provider(cfg, "extract"), OpenAICompatibleProvider)
    assert make_llm_provider(cfg, "gate") is None
    with pytest.raises(Exception, match="openai_model must name the model"):
        extract_config(provider="openai")
    on_openai = OpenAICompatibleProvider(
        extract_config(provider="openai", openai_url="https://api.openai.com/v1", openai_model="gpt-4o-mini")
    )
    assert on_openai.provider == "openai"


def test_openai_prices() -> None:
    usage = Usage(provider="openai", model="gpt-4o-mini-2024-07-18", input_tokens=1_000_000, output_tokens=1_000_000)
    assert cost_usd(usage) == pytest.approx(0.15 + 0.60)
    cached = Usage(provider="openai", model="gpt-4.1", input_tokens=0, output_tokens=0, cache_read_tokens=1_000_000)
    assert cost_usd(cached) == pytest.approx(2.00)  # cached input priced as input: never under-stated
    assert openai_price_for("gpt-7-mini").output == 2.00 and openai_price_for("o9-pro").output == 120.00
    local_model = Usage(provider="openai-compatible", model="gpt-4o-mini", input_tokens=10**9, output_tokens=10**9)
    assert cost_usd(local_model) == 0.0  # llama-server --alias gpt-4o-mini costs nothing
