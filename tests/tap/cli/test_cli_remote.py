"""The CLI against a running server, in one process: the commands go through the admin-API client
(tap.cli.admin_client.AdminClient) to a real tap app on loopback, never opening the store themselves.

tests/tap/wiring/test_serve.py does the same against a `tap serve` process (slow); here the server is the
in-process harness (tests/proxy/harness.py) with its server record written as `tap serve` writes it.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from click.testing import CliRunner, Result

from tap.admin_token import ServerInfo, write_server_info
from tap.cli.main import main
from testkit.upstreams import FakeAnthropic
from tests.proxy.harness import TapProxy


def record_server(tap: TapProxy) -> None:
    """Write the token and server record as `tap serve` does, so the CLI finds the server."""
    (tap.home / "admin-token").write_text("test-token\n", encoding="utf-8")
    write_server_info(tap.home, ServerInfo(url=tap.url, pid=os.getpid()))


@pytest.fixture
async def served(isolated_home: Path) -> AsyncIterator[TapProxy]:
    async with TapProxy(isolated_home) as tap:
        record_server(tap)
        yield tap


async def cli(*args: str) -> Result:
    """`tap ARGS` in a worker thread, so the server on this event loop can answer it."""
    result = await asyncio.to_thread(CliRunner().invoke, main, list(args))
    assert result.exit_code == 0, (args, result.output, result.exception)
    return result


async def as_json(*args: str) -> Any:
    return json.loads((await cli(*args, "--json")).stdout)


async def test_memories_are_added_found_edited_and_forgotten_through_the_server(served: TapProxy) -> None:
    memory_id = (await as_json("memories", "add", "Ann keeps bees in Sintra", "--scope", "ann"))["id"]
    assert served.rt is not None and [m.id for m in served.rt.store.get([memory_id])] == [memory_id]
    for n in range(2):
        await cli("memories", "add", f"Ann has hive number {n}", "--scope", "ann")
    listed = await cli("memories", "list", "--limit", "2")
    assert "1–2 of 3 (next: --offset 2)" in listed.stderr
    assert len(await as_json("memories", "list", "--scope", "ann")) == 3
    assert (await as_json("memories", "search", "bees"))[0]["memory"]["id"] == memory_id
    assert (await as_json("recall", "bees", "--scope", "ann"))["memories"][0]["id"] == memory_id
    edited = await as_json("memories", "edit", memory_id, "--content", "Ann keeps bees in Cascais")
    shown = await as_json("memories", "show", edited["id"])
    assert [m["content"] for m in shown["chain"]] == ["Ann keeps bees in Sintra", "Ann keeps bees in Cascais"]
    archived = await as_json("memories", "archive", edited["id"])
    assert archived["archived_at"] > 0
    assert (await as_json("memories", "restore", edited["id"]))["archived_at"] == 0
    stats = await as_json("memories", "stats")
    assert stats["by_scope"] == {"ann": 3} and stats["location"].startswith("memory")
    forgotten = await as_json("memories", "forget", edited["id"], "--yes")
    assert set(forgotten["deleted"]) == {memory_id, edited["id"]}
    assert served.rt.store.get([memory_id, edited["id"]]) == []


async def test_export_import_conflicts_and_status_through_the_server(served: TapProxy, tmp_path: Path) -> None:
    assert served.rt is not None
    work = served.remember("The user works at Google", scope="ann")
    other = served.remember("The user works at Stripe", scope="ann")
    a, b = served.rt.store.get([work, other])
    a.conflicts_with, b.conflicts_with = [other], [work]
    served.rt.store.update_metadata([a, b])
    (pair,) = (await as_json("memories", "conflicts"))["conflicts"]
    assert {pair["a"]["id"], pair["b"]["id"]} == {work, other}
    (settled,) = await as_json("memories", "resolve", work, "--keep", other)
    assert (settled["kept"]["id"], settled["superseded"]["id"]) == (other, work)
    exported = tmp_path / "export.jsonl"
    await cli("memories", "export", "--output", str(exported))
    lines = exported.read_text(encoding="utf-8").splitlines()
    assert {json.loads(line)["id"] for line in lines} == {work, other}
    served.rt.store.delete([work])
    report = await as_json("memories", "import", str(exported))
    assert report["imported"] == 1 and [m.id for m in served.rt.store.get([work])] == [work]
    status = await as_json("status")
    assert status["server"] == served.url
    plan = await as_json("memories", "consolidate", "--dry-run")
    assert plan["dry_run"] is True


async def test_why_and_ui_read_the_running_server(isolated_home: Path) -> None:
    async with FakeAnthropic() as up, TapProxy(isolated_home, anthropic=up.url) as tap:
        record_server(tap)
        memory_id = tap.remember("The user likes jazz", scope="default")
        body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "any jazz tonight?"}]}
        async with aiohttp.ClientSession() as session:
            await session.post(tap.url + "/v1/messages", json=body, headers={"x-api-key": "k"})
        record = await as_json("why", "--last")
        (recent,) = (await as_json("why", "--list", "5"))["requests"]
        text = (await cli("why", recent["request_id"])).stdout
        link = (await cli("ui")).stdout.strip()
    assert any(c["id"] == memory_id and c["outcome"] == "injected" for c in record["candidates"])
    assert recent["injected"] == 1 and "The user likes jazz" in text and "in the block" in text
    assert link.startswith(f"{tap.url}/ui#code=") and "test-token" not in link
