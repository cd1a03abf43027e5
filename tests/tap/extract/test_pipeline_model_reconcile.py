"""A model's candidates through the same reconcile as the rules' (issue #44, the LLM path at parity).

tap serve's runtime with `[extract] provider = "openai"` against a fake OpenAI-compatible server on
loopback: the model extracts annotated statements (holder, slot, change, retractions, corrections,
deaths), and `tap.extract.reconcile.decide` decides what they do to the store, with no reconcile
call; with `reconcile = "llm"` the model decides, inside the same invariants.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tap.config import LoadedConfig, parse_config
from tap.records import IngestEvent, Memory, Message
from tap.wiring.runtime import Runtime, open_runtime
from testkit.upstreams import FakeOpenAI

pytestmark = pytest.mark.xdist_group("sdk")  # the runtime's provider imports the openai SDK

DAY = 86_400.0
START = 1_767_225_600.0  # 2026-01-01


def runtime_for(home: Path, url: str, **extract: str) -> Runtime:
    lines = [
        "[extract]",
        'provider = "openai"',
        f'openai_url = "{url}/v1"',
        'openai_model = "local-test"',
        "backoff_s = 0.0",
        "max_attempts = 2",
        "flush_after_s = 0.0",
        *(f"{key} = {value}" for key, value in extract.items()),
    ]
    return open_runtime(LoadedConfig(config=parse_config("\n".join(lines)), path=None, data_dir=home))


@asynccontextmanager
async def model_runtime(home: Path, **extract: str) -> AsyncIterator[tuple[Runtime, FakeOpenAI]]:
    """tap's runtime extracting through a fake OpenAI-compatible model, closed on the way out."""
    async with FakeOpenAI() as fake:
        rt = runtime_for(home, fake.url, **extract)
        try:
            yield rt, fake
        finally:
            rt.close()


def tell(rt: Runtime, conversation: str, text: str, day: float) -> None:
    """One exchange said on `day` (days after START): the user's turn and a short answer."""
    at = START + day * DAY
    messages = [
        Message(role="user", content=text, id=f"{conversation}-u", timestamp=at),
        Message(role="assistant", content="Noted, I will remember that.", id=f"{conversation}-a", timestamp=at + 5),
    ]
    rt.ingestor.ingest(IngestEvent(scope="kim", conversation=conversation, source="proxy", messages=messages))


def statement(conversation: str, content: str, **fields: Any) -> dict[str, Any]:
    """A memory as the model answers it, citing the user's turn of `conversation`."""
    return {"content": content, "kind": "fact", "importance": 4, "tags": [], "turn_ids": [f"{conversation}-u"]} | fields


async def said(rt: Runtime, fake: FakeOpenAI, conversation: str, text: str, day: float, *memories: Any) -> None:
    """The user says `text` on `day`; the model extracts `memories` from it; the worker runs."""
    fake.reply_content({"memories": list(memories)})
    tell(rt, conversation, text, day)
    await asyncio.to_thread(rt.worker.drain)


def statements(rt: Runtime) -> dict[str, Memory]:
    """Every statement of the scope (superseded ones too), by content."""
    every = rt.store.list_memories(scope="kim", limit=100, include_superseded=True)
    return {m.content: m for m in every if m.kind != "episode"}


def current(rt: Runtime) -> list[str]:
    return sorted(content for content, m in statements(rt).items() if m.active)


AARHUS = {"holder": "user", "attribute": "residence", "value": "Aarhus"}
LJUBLJANA = {"holder": "user", "attribute": "residence", "value": "Ljubljana", "change": "update"}


async def test_a_move_supersedes_through_the_rules_without_a_reconcile_call(isolated_home: Path) -> None:
    async with model_runtime(isolated_home) as (rt, fake):
        await said(rt, fake, "c1", "I live in Aarhus.", 0, statement("c1", "The user lives in Aarhus.", **AARHUS))
        await said(
            rt,
            fake,
            "c2",
            "I moved to Ljubljana last week.",
            30,
            statement("c2", "The user moved to Ljubljana.", **LJUBLJANA),
        )
        stored = statements(rt)
        now = current(rt)
    assert now == ["The user moved to Ljubljana."]
    assert stored["The user lives in Aarhus."].superseded_by == stored["The user moved to Ljubljana."].id
    assert stored["The user moved to Ljubljana."].slot == "user|residence"
    assert len(fake.requests) == 2  # two extractions, no reconcile call
    second = fake.requests[1].json()["messages"][1]["content"]
    assert "The user lives in Aarhus. {holder: user; residence = aarhus}" in second  # attribute names to reuse


async def test_going_back_restores_the_earlier_value_as_current(isolated_home: Path) -> None:
    async with model_runtime(isolated_home) as (rt, fake):
        for conversation, content, fields, day in [
            ("c1", "The user lives in Aarhus.", AARHUS, 0),
            ("c2", "The user moved to Ljubljana.", LJUBLJANA, 30),
            ("c3", "The user moved back to Aarhus.", {**AARHUS, "change": "update"}, 90),
        ]:
            await said(rt, fake, conversation, content, day, statement(conversation, content, **fields))
        stored = statements(rt)
        now = current(rt)
    assert now == ["The user moved back to Aarhus."]
    assert stored["The user moved to Ljubljana."].superseded_by == stored["The user moved back to Aarhus."].id


async def test_a_relatives_move_never_replaces_the_users_home(isolated_home: Path) -> None:
    async with model_runtime(isolated_home) as (rt, fake):
        await said(rt, fake, "c1", "I live in Aarhus.", 0, statement("c1", "The user lives in Aarhus.", **AARHUS))
        sister = {"holder": "user:sister", "attribute": "residence", "value": "Aarhus", "change": "update"}
        await said(
            rt,
            fake,
            "c2",
            "My sister moved to Aarhus.",
            10,
            statement("c2", "The user's sister moved to Aarhus.", **sister),
        )
        now = current(rt)
    assert now == ["The user lives in Aarhus.", "The user's sister moved to Aarhus."]


async def test_an_older_statement_ingested_late_is_written_as_history(isolated_home: Path) -> None:
    async with model_runtime(isolated_home) as (rt, fake):
        await said(
            rt,
            fake,
            "c2",
            "I moved to Ljubljana last week.",
            30,
            statement("c2", "The user moved to Ljubljana.", **LJUBLJANA),
        )
        # a backfilled log: said a month earlier, extracted later
        await said(rt, fake, "c1", "I live in Aarhus.", 0, statement("c1", "The user lives in Aarhus.", **AARHUS))
        stored = statements(rt)
        now = current(rt)
    assert now == ["The user moved to Ljubljana."]
    assert stored["The user lives in Aarhus."].superseded_by == stored["The user moved to Ljubljana."].id


async def test_corrections_retractions_and_deaths_end_what_they_end(isolated_home: Path) -> None:
    async with model_runtime(isolated_home) as (rt, fake):
        teacher = {"holder": "user:piano teacher", "attribute": "name", "value": "Marit"}
        cat = {"holder": "user:cat"}
        await said(
            rt,
            fake,
            "c1",
            "My piano teacher is Marit. I own a camper van. My cat Biscuit is 12.",
            0,
            statement("c1", "The user's piano teacher is Marit.", **teacher),
            statement("c1", "The user owns a camper van.", holder="user"),
            statement("c1", "The user's cat Biscuit is 12 years old.", **cat),
        )
        await said(
            rt,
            fake,
            "c2",
            "Sorry, I mean Maren, not Marit. I sold the camper van. Biscuit died yesterday.",
            20,
            statement(
                "c2",
                "The user's piano teacher is Maren.",
                **(teacher | {"value": "Maren"}),
                wrong_value="Marit",
                right_value="Maren",
            ),
            statement(
                "c2",
                "The user sold the camper van.",
                kind="event",
                holder="user",
                retracts=["camper", "van"],
                change="update",
            ),
            statement(
                "c2",
                "The user's cat Biscuit died.",
                kind="event",
                holder="user:cat",
                died_name="Biscuit",
                died_relation="cat",
            ),
        )
        now = current(rt)
    assert now == [
        "The user sold the camper van.",
        "The user's cat Biscuit died.",
        "The user's piano teacher is Maren.",
    ]


async def test_a_models_reconcile_decision_stays_inside_the_invariants(isolated_home: Path) -> None:
    async with model_runtime(isolated_home, reconcile='"llm"') as (rt, fake):
        await said(rt, fake, "c1", "I live in Aarhus.", 0, statement("c1", "The user lives in Aarhus.", **AARHUS))
        (aarhus,) = current(rt)
        aarhus_id = statements(rt)[aarhus].id
        sister = {"holder": "user:sister", "attribute": "residence", "value": "Ljubljana", "change": "update"}
        fake.reply_content({"memories": [statement("c2", "The user's sister moved to Ljubljana.", **sister)]})
        fake.reply_content({"decisions": [{"candidate": 0, "action": "supersede", "target": aarhus_id, "content": ""}]})
        tell(rt, "c2", "My sister moved to Ljubljana.", 10)
        await asyncio.to_thread(rt.worker.drain)
        now = current(rt)
    asked = fake.requests[-1].json()
    assert asked["response_format"]["json_schema"]["name"] == "reconcile_memories"
    assert "{holder: user:sister; residence = ljubljana}" in asked["messages"][1]["content"]
    assert now == ["The user lives in Aarhus.", "The user's sister moved to Ljubljana."]  # added, not replacing
