"""A conversation through the proxy becomes memories that a later request recalls (embedded default)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from testkit.upstreams import FakeAnthropic
from tests.proxy.harness import TapProxy
from tests.sdk import sdk

if TYPE_CHECKING:
    import anthropic
else:
    anthropic = sdk("anthropic")


async def test_chat_through_the_proxy_is_remembered_in_a_later_chat(isolated_home: Path) -> None:
    async with FakeAnthropic() as up, TapProxy(isolated_home, anthropic=up.url) as tap:
        client = anthropic.AsyncAnthropic(base_url=tap.url, api_key="sk-ant-e2e", max_retries=0)
        await client.messages.create(
            model="claude-haiku-4-5",
            max_tokens=64,
            messages=[
                {
                    "role": "user",
                    "content": "I just adopted a greyhound called Pastel and I'm going to "
                    "train her for agility competitions next spring.",
                }
            ],
        )
        await tap.settle()
        assert tap.rt is not None
        processed = await asyncio.to_thread(tap.rt.worker.drain)
        stored = tap.rt.store.list_memories(scope="default", limit=50)
        later = await client.messages.create(
            model="claude-haiku-4-5",
            max_tokens=64,
            messages=[{"role": "user", "content": "What should I pack for Pastel's agility class?"}],
        )
        await client.close()
    assert processed == 1 and later.id
    extracted = [m for m in stored if m.kind != "episode"]
    assert any("Pastel" in m.content and "greyhound" in m.content for m in extracted)
    assert all(m.sources and m.source == "proxy" for m in stored)
    sent = up.requests[-1].json()["messages"][-1]["content"]
    assert sent[0]["text"] == "What should I pack for Pastel's agility class?"
    assert "<recalled-memories>" in sent[1]["text"] and "Pastel" in sent[1]["text"]
