"""The Haiku gate → Sonnet extractor → reconcile path against a fake Anthropic API on loopback.

Checks cost accounting and the daily cap, and that bad model output or API errors keep the chunk
queued (retry, then dead letter) with nothing half-written.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tap.config import LoadedConfig, parse_config
from tap.records import IngestEvent, Message
from tap.wiring.runtime import Runtime, open_runtime
from testkit.upstreams import FakeAnthropic

# The runtime's Anthropic provider imports the SDK: with the other tests that do (tests/sdk.py).
pytestmark = pytest.mark.xdist_group("sdk")

KEY = "sk-ant-test-key"


def runtime_for(home: Path, url: str, **extract: Any) -> Runtime:
    lines = [
        "[extract]",
        'provider = "anthropic"',
        'gate = "anthropic"',
        f'anthropic_url = "{url}"',
        'api_key_env = "TAP_TEST_ANTHROPIC_KEY"',
        "backoff_s = 0.0",
        "max_attempts = 2",
        "flush_after_s = 0.0",
    ]
    lines += [f"{k} = {v}" for k, v in extract.items()]
    return open_runtime(LoadedConfig(config=parse_config("\n".join(lines)), path=None, data_dir=home))


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAP_TEST_ANTHROPIC_KEY", KEY)


def ingest(rt: Runtime, conversation: str, text: str) -> None:
    rt.ingestor.ingest(
        IngestEvent(
            scope="ana",
            conversation=conversation,
            source="proxy",
            messages=[
                Message(role="user", content=text, name="Ana", id=f"{conversation}-u", timestamp=1_700_000_000),
                Message(
                    role="assistant",
                    content="Noted, I will remember that.",
                    id=f"{conversation}-a",
                    timestamp=1_700_000_005,
                ),
            ],
        )
    )


MEMORY = {
    "content": "Ana is vegetarian since 2019",
    "kind": "preference",
    "importance": 4,
    "tags": ["food"],
    "turn_ids": ["c1-u"],
}


async def test_gate_then_extract_records_cost_and_memories(isolated_home: Path) -> None:
    async with FakeAnthropic(api_key=KEY) as api:
        api.reply_tool(
            "gate_verdict",
            {"worth": True, "reason": "a lasting dietary preference"},
            usage={"input_tokens": 400, "output_tokens": 20},
        )
        api.reply_tool("record_memories", {"memories": [MEMORY]}, usage={"input_tokens": 900, "output_tokens": 80})
        rt = runtime_for(isolated_home, api.url)
        try:
            ingest(rt, "c1", "I have been vegetarian since 2019, please keep that in mind for recipes.")
            assert await _drain(rt) == 1
            stored = [m for m in rt.store.list_memories(scope="ana", limit=10) if m.kind != "episode"]
            status = rt.worker.status()
        finally:
            rt.close()
    gate, extract = api.requests
    assert gate.json()["model"] == "claude-haiku-4-5" and extract.json()["model"] == "claude-sonnet-4-6"
    assert gate.json()["tool_choice"]["name"] == "gate_verdict"
    assert "vegetarian since 2019" in str(extract.json()["messages"])
    assert [(m.content, m.sources, m.importance) for m in stored] == [("Ana is vegetarian since 2019", ("c1-u",), 4)]
    cost = status["cost_today"]
    expected = 400 * 1.0 / 1e6 + 20 * 5.0 / 1e6 + 900 * 3.0 / 1e6 + 80 * 15.0 / 1e6
    assert cost["cost_usd"] == pytest.approx(expected, rel=1e-6)
    assert {c["purpose"] for c in cost["calls"]} == {"gate", "extract"}


async def test_second_chunk_reconciles_against_similar_memories_in_one_call(isolated_home: Path) -> None:
    async with FakeAnthropic(api_key=KEY) as api:
        rt = runtime_for(isolated_home, api.url, reconcile='"llm"')
        try:
            api.reply_tool("gate_verdict", {"worth": True, "reason": "diet"})
            api.reply_tool("record_memories", {"memories": [MEMORY]})
            ingest(rt, "c1", "I have been vegetarian since 2019.")
            await _drain(rt)
            (old,) = [m for m in rt.store.list_memories(scope="ana", limit=10) if m.kind != "episode"]
            api.reply_tool("gate_verdict", {"worth": True, "reason": "diet change"})
            api.reply_tool(
                "record_memories",
                {"memories": [{**MEMORY, "content": "Ana is vegan since 2024", "turn_ids": ["c2-u"]}]},
            )
            api.reply_tool(
                "reconcile_memories",
                {"decisions": [{"candidate": 0, "action": "supersede", "target": old.id, "content": ""}]},
            )
            ingest(rt, "c2", "Update: I went fully vegan in 2024.")
            await _drain(rt)
            active = [m for m in rt.store.list_memories(scope="ana", limit=10) if m.kind != "episode"]
            chain = rt.memories.chain(active[0].id)
        finally:
            rt.close()
    assert [m.content for m in active] == ["Ana is vegan since 2024"]
    assert [m.content for m in chain] == ["Ana is vegetarian since 2019", "Ana is vegan since 2024"]
    assert chain[1].sources == ("c2-u",)  # a new statement cites its own turn; the chain keeps the old one
    assert old.id in str(api.requests[-1].json()["messages"])


async def test_daily_budget_pauses_llm_calls_and_keeps_chunks(isolated_home: Path) -> None:
    async with FakeAnthropic(api_key=KEY) as api:
        api.reply_tool(
            "gate_verdict",
            {"worth": False, "reason": "small talk"},
            usage={"input_tokens": 2_000_000, "output_tokens": 0},
        )
        rt = runtime_for(isolated_home, api.url, daily_budget_usd=1.0)
        try:
            ingest(rt, "c1", "I love hiking in the Alps every summer with my brother Tiago.")
            ingest(rt, "c2", "My favourite author is Saramago and I reread Blindness every year.")
            await _drain(rt)
            status = rt.worker.status()
        finally:
            rt.close()
    assert len(api.requests) == 1
    assert status["queue"]["queued"] == 1 and status["queue"]["done"] == 1
    assert "daily LLM budget reached" in status["paused"]
    assert status["cost_today"]["cost_usd"] == pytest.approx(2.0)


async def test_malformed_output_retries_then_dead_letters_with_the_reason(isolated_home: Path) -> None:
    async with FakeAnthropic(api_key=KEY) as api:
        for _ in range(2):
            api.reply_tool("gate_verdict", {"worth": True, "reason": "x"})
            api.reply_tool("record_memories", {"memories": [{**MEMORY, "turn_ids": ["made-up-turn"]}]})
        rt = runtime_for(isolated_home, api.url)
        try:
            ingest(rt, "c1", "I have been vegetarian since 2019.")
            await _drain(rt)
            await _drain(rt)
            status = rt.worker.status()
            stored = rt.store.list_memories(scope="ana", limit=10, include_superseded=True)
        finally:
            rt.close()
    (dead,) = status["dead_letters"]
    assert dead["attempts"] == 2 and "turn" in dead["error"]
    assert stored == []


async def test_rate_limits_back_off_and_keep_the_chunk(isolated_home: Path) -> None:
    async with FakeAnthropic(api_key=KEY) as api:
        api.reply_error(429, "rate_limit_error", "slow down", headers={"retry-after": "30"})
        rt = runtime_for(isolated_home, api.url)
        try:
            ingest(rt, "c1", "I have been vegetarian since 2019.")
            await _drain(rt)
            await _drain(rt)  # not ready again yet: retry-after is 30 s
            status = rt.worker.status()
        finally:
            rt.close()
    assert len(api.requests) == 1
    assert status["queue"]["queued"] == 1 and status["queue"]["dead"] == 0


async def _drain(rt: Runtime) -> int:
    return await asyncio.to_thread(rt.worker.drain)


async def test_the_model_can_mark_a_conflict_and_both_memories_stay(isolated_home: Path) -> None:
    async with FakeAnthropic(api_key=KEY) as api:
        rt = runtime_for(isolated_home, api.url, reconcile='"llm"')
        try:
            job = {**MEMORY, "content": "Ana works at Google", "kind": "fact", "turn_ids": ["c1-u"]}
            api.reply_tool("gate_verdict", {"worth": True, "reason": "job"})
            api.reply_tool("record_memories", {"memories": [job]})
            ingest(rt, "c1", "I work at Google.")
            await _drain(rt)
            (google,) = [m for m in rt.store.list_memories(scope="ana", limit=10) if m.kind != "episode"]
            api.reply_tool("gate_verdict", {"worth": True, "reason": "job"})
            api.reply_tool(
                "record_memories", {"memories": [{**job, "content": "Ana works at Stripe", "turn_ids": ["c2-u"]}]}
            )
            api.reply_tool(
                "reconcile_memories",
                {"decisions": [{"candidate": 0, "action": "conflict", "target": google.id, "content": ""}]},
            )
            ingest(rt, "c2", "I work at Stripe.")
            await _drain(rt)
            stored = {m.content: m for m in rt.store.list_memories(scope="ana", limit=10) if m.kind != "episode"}
            conflicts = rt.memories.conflicts(scope="ana")
        finally:
            rt.close()
    stripe = stored["Ana works at Stripe"]
    assert stored["Ana works at Google"].conflicts_with == (stripe.id,) and stripe.conflicts_with == (google.id,)
    assert all(m.active for m in stored.values()) and len(conflicts) == 1
    assert "'conflict'" in str(api.requests[-1].json()["tools"])  # the model is offered the action
