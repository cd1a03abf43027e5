"""A memory's history: its versions, which one is current, and the turns each came from."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING

import aiohttp
from click.testing import CliRunner

from tap.cli.main import main
from tap.config import LoadedConfig, parse_config
from tap.ingest.capture import Exchange, TurnLog
from tap.memories.history import order
from tap.records import IngestEvent, Memory, Message
from tap.wiring.runtime import open_runtime
from testkit.upstreams import FakeAnthropic
from tests.proxy.harness import TapProxy
from tests.sdk import sdk

if TYPE_CHECKING:
    import anthropic
else:
    anthropic = sdk("anthropic")

T0 = 1_700_000_000.0


def test_show_gives_each_version_and_the_turns_it_came_from(isolated_home: Path) -> None:
    rt = open_runtime(LoadedConfig(config=parse_config(""), path=None, data_dir=isolated_home))  # the CLI reads it
    messages = [
        Message(role="user", content="I moved to Lisbon last month, the light here is unreal.", id="t1", timestamp=T0),
        Message(role="assistant", content="Lisbon is lovely!", id="t2", timestamp=T0 + 5),
    ]
    rt.ingestor.ingest(IngestEvent(scope="ann", conversation="c1", source="logtail", messages=messages))
    rt.worker.drain()
    (moved,) = [m for m in rt.store.list_memories(scope="ann", limit=50) if m.kind != "episode"]
    newer = rt.memories.edit(moved.id, content="The user moved to Lisbon in October 2023")
    rt.close()
    runner = CliRunner()
    shown = json.loads(runner.invoke(main, ["memories", "show", newer.id, "--json"], catch_exceptions=False).stdout)
    history = shown["history"]
    assert [(v["id"], v["current"]) for v in history] == [(moved.id, False), (newer.id, True)]
    for version in history:  # the ingested turn is still in the queue: its text, role and time
        assert version["turns"] == [
            {"id": "t1", "role": "user", "text": "I moved to Lisbon last month, the light here is unreal.", "at": T0}
        ]
    text = runner.invoke(main, ["memories", "show", moved.id], catch_exceptions=False).stdout
    assert f"(current: {newer.id})" in text and f"[superseded by {newer.id}]" in text
    assert "← t1 (user, 2023-11-14 22:13): I moved to Lisbon last month" in text
    listed = runner.invoke(main, ["memories", "list", "--all-versions"], catch_exceptions=False).stdout
    assert "current" in listed and f"old → {newer.id}" in listed
    plain = runner.invoke(main, ["memories", "list"], catch_exceptions=False).stdout
    assert "version" not in plain  # only current memories: no column to mark them


async def test_history_over_the_admin_api_finds_proxied_turns_in_the_turn_log(isolated_home: Path) -> None:
    async with FakeAnthropic() as up, TapProxy(isolated_home, anthropic=up.url) as tap:
        client = anthropic.AsyncAnthropic(base_url=tap.url, api_key="sk-ant-e2e", max_retries=0)
        text = "I just adopted a greyhound called Pastel and I'm training her for agility."
        await client.messages.create(model="m", max_tokens=8, messages=[{"role": "user", "content": text}])
        await client.close()
        await tap.settle()
        assert tap.rt is not None
        await asyncio.to_thread(tap.rt.worker.drain)
        (pastel,) = [m for m in tap.rt.store.list_memories(scope="default", limit=50) if m.kind != "episode"]
        tap.rt.queue.prune_done(before=10**12)  # only the turn log still has the text
        headers = {"Authorization": "Bearer test-token"}
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{tap.url}/tap/memories/{pastel.id}", headers=headers) as response:
                body = await response.json()
    (version,) = body["history"]
    assert version["current"] is True and version["archived"] is False and version["conflicts_with"] == []
    assert [(t["role"], t["text"]) for t in version["turns"]] == [("user", text)]
    assert body["chain"][0]["id"] == pastel.id


def test_turn_log_hands_out_turns_by_id(tmp_path: Path) -> None:
    log = TurnLog(tmp_path / "turnlog.db")
    exchange = Exchange(
        scope="s",
        conversation="c",
        dialect="anthropic",
        user_turn_id="u1",
        user_text="my password is hunter2, and I live in Lisbon",
        reply_turn_id="a1",
        reply_text="Noted!",
        started_at=T0,
        finished_at=T0 + 2,
    )
    log.append(exchange)
    turns = {t.id: t for t in log.source_turns("s", "c", {"u1", "a1", "zz"})}
    assert turns.keys() == {"u1", "a1"} and turns["a1"].role == "assistant" and turns["a1"].at == T0 + 2
    assert "hunter2" not in turns["u1"].text and "Lisbon" in turns["u1"].text  # scrubbed when logged
    assert log.source_turns("other", "c", {"u1"}) == []
    log.close()


def test_versions_come_oldest_first_across_merges() -> None:
    def m(key: str, at: float, **links: object) -> Memory:
        return Memory(id=key, scope="s", content=key, created_at=at, **links)  # type: ignore[arg-type]

    merged = m("c", 1.0, merged_from=["a", "b"], supersedes="")
    versions = [merged, m("b", 5.0, superseded_by="c"), m("a", 3.0, superseded_by="c"), m("d", 0.5, supersedes="c")]
    assert [v.id for v in order(versions)] == ["a", "b", "c", "d"]  # links first, creation time for ties
