"""The lifecycle admin API (the contract the web page builds on), over real HTTP on a real store."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tap.records import Memory
from testkit.upstreams import FakeAnthropic
from tests.proxy.harness import TapProxy

AUTH = {"Authorization": "Bearer test-token"}


async def call(session: aiohttp.ClientSession, method: str, url: str, body: Any = None) -> tuple[int, Any]:
    async with session.request(method, url, json=body, headers=AUTH) as response:
        return response.status, await response.json()


async def test_archive_restore_and_listing_by_archived(isolated_home: Path) -> None:
    async with FakeAnthropic() as up, TapProxy(isolated_home, anthropic=up.url) as tap, aiohttp.ClientSession() as s:
        tea = tap.remember("Ann likes oolong tea", scope="ann")
        bees = tap.remember("Ann keeps bees in Sintra", scope="ann")
        status, archived = await call(s, "POST", f"{tap.url}/tap/memories/{tea}/archive")
        assert status == 200 and archived["archived"] is True and archived["archived_at"] > 0
        status, listed = await call(s, "GET", f"{tap.url}/tap/memories?scope=ann")
        assert status == 200 and {(m["id"], m["archived"]) for m in listed["memories"]} == {(tea, True), (bees, False)}
        assert all(m["conflicts_with"] == [] for m in listed["memories"])
        _, only = await call(s, "GET", f"{tap.url}/tap/memories?scope=ann&archived=1")
        _, none = await call(s, "GET", f"{tap.url}/tap/memories?scope=ann&archived=0")
        assert [m["id"] for m in only["memories"]] == [tea] and [m["id"] for m in none["memories"]] == [bees]
        assert (await call(s, "GET", f"{tap.url}/tap/memories?archived=maybe"))[0] == 400
        _, recalled = await call(s, "POST", f"{tap.url}/tap/recall", {"text": "oolong tea", "scope": "ann"})
        assert tea not in [m["id"] for m in recalled["memories"]]
        status, restored = await call(s, "POST", f"{tap.url}/tap/memories/{tea}/restore")
        assert status == 200 and restored["archived"] is False and restored["archived_at"] == 0
        _, recalled = await call(s, "POST", f"{tap.url}/tap/recall", {"text": "oolong tea", "scope": "ann"})
        assert recalled["memories"][0]["id"] == tea
        status, body = await call(s, "POST", f"{tap.url}/tap/memories/m_nope/archive")
        assert status == 404 and "error" in body
        await call(s, "POST", f"{tap.url}/tap/memories/{bees}/archive")
        status, edited = await call(
            s, "PATCH", f"{tap.url}/tap/memories/{bees}", {"content": "Ann keeps bees in Mafra"}
        )
        assert status == 200 and edited["archived"] is True  # a corrected archived memory stays set aside
        _, active = await call(s, "GET", f"{tap.url}/tap/memories?scope=ann&archived=0")
        assert [m["id"] for m in active["memories"]] == [tea]


async def test_conflicts_and_resolve(isolated_home: Path) -> None:
    async with FakeAnthropic() as up, TapProxy(isolated_home, anthropic=up.url) as tap, aiohttp.ClientSession() as s:
        assert tap.rt is not None
        now = time.time()
        pair = [
            Memory(id="m_g", scope="ann", content="Ann works at Google", created_at=now, conflicts_with=["m_s"]),
            Memory(id="m_s", scope="ann", content="Ann works at Stripe", created_at=now + 1, conflicts_with=["m_g"]),
        ]
        tap.rt.memories.write(pair)
        status, body = await call(s, "GET", f"{tap.url}/tap/conflicts?scope=ann")
        (conflict,) = body["conflicts"]
        assert status == 200 and (conflict["a"]["id"], conflict["b"]["id"]) == ("m_g", "m_s")
        assert conflict["since"] == pytest.approx(now + 1)  # (the store keeps times to the microsecond)
        assert conflict["a"]["conflicts_with"] == ["m_s"]
        assert (await call(s, "GET", f"{tap.url}/tap/conflicts?scope=bob"))[1] == {"conflicts": []}
        for bad in (
            {"keep": "m_s"},
            {"keep": "m_s", "drop": "m_s"},
            {"keep": 1, "drop": "m_g"},
            {"keep": "m_s", "drop": "m_g", "both": "y"},
        ):
            status, body = await call(s, "POST", f"{tap.url}/tap/conflicts/resolve", bad)
            assert status == 400 and "error" in body, bad
        assert (await call(s, "POST", f"{tap.url}/tap/conflicts/resolve", {"keep": "m_s", "drop": "m_x"}))[0] == 404
        status, body = await call(s, "POST", f"{tap.url}/tap/conflicts/resolve", {"keep": "m_s", "drop": "m_g"})
        assert status == 200 and body["kept"]["id"] == "m_s" and body["superseded"]["superseded_by"] == "m_s"
        assert body["kept"]["conflicts_with"] == [] and body["also_kept"] is None
        assert (await call(s, "GET", f"{tap.url}/tap/conflicts"))[1] == {"conflicts": []}
        status, body = await call(s, "POST", f"{tap.url}/tap/conflicts/resolve", {"keep": "m_s", "drop": "m_g"})
        assert status == 400 and "not in conflict" in body["error"]


async def test_a_conflict_ends_while_one_side_is_archived(isolated_home: Path) -> None:
    async with FakeAnthropic() as up, TapProxy(isolated_home, anthropic=up.url) as tap, aiohttp.ClientSession() as s:
        assert tap.rt is not None
        now = time.time()
        tap.rt.memories.write(
            [
                Memory(id="m_g", scope="ann", content="Ann works at Google", created_at=now, conflicts_with=["m_s"]),
                Memory(
                    id="m_s", scope="ann", content="Ann works at Stripe", created_at=now + 1, conflicts_with=["m_g"]
                ),
            ]
        )

        async def marks() -> dict[str, list[str]]:
            _, listed = await call(s, "GET", f"{tap.url}/tap/memories?scope=ann")
            _, found = await call(s, "GET", f"{tap.url}/tap/memories/search?scope=ann&q=works")
            _, shown = await call(s, "GET", f"{tap.url}/tap/memories/m_s")
            marked = {m["id"]: m["conflicts_with"] for m in listed["memories"]}
            assert found["results"] and all(
                r["memory"]["conflicts_with"] == marked[r["memory"]["id"]] for r in found["results"]
            )
            assert shown["memory"]["conflicts_with"] == shown["history"][-1]["conflicts_with"] == marked["m_s"]
            return marked

        assert await marks() == {"m_g": ["m_s"], "m_s": ["m_g"]}
        await call(s, "POST", f"{tap.url}/tap/memories/m_g/archive")
        assert await marks() == {"m_g": [], "m_s": []}  # as GET /tap/conflicts sees it: no pair left
        assert (await call(s, "GET", f"{tap.url}/tap/conflicts"))[1] == {"conflicts": []}
        await call(s, "POST", f"{tap.url}/tap/memories/m_g/restore")
        assert await marks() == {"m_g": ["m_s"], "m_s": ["m_g"]}  # the mark was kept: the conflict is back
        (pair,) = (await call(s, "GET", f"{tap.url}/tap/conflicts"))[1]["conflicts"]
        assert pair["a"]["conflicts_with"] == ["m_s"] and pair["b"]["conflicts_with"] == ["m_g"]


async def test_consolidate_and_why_shapes(isolated_home: Path) -> None:
    async with FakeAnthropic() as up, TapProxy(isolated_home, anthropic=up.url) as tap, aiohttp.ClientSession() as s:
        for text in ("Ann lives in Lisbon", "Ann lives in Lisbon with her partner"):
            tap.remember(text, scope="ann")
        status, preview = await call(s, "POST", f"{tap.url}/tap/consolidate", {"dry_run": True})
        assert status == 200 and preview["dry_run"] is True and preview["merged"] == 2 and preview["archived"] == 0
        assert set(preview) >= {"merged", "archived", "groups", "dry_run"}
        assert set(preview["groups"][0]) >= {"scope", "into", "members", "content"}
        for bad in ({"scope": ""}, {"scope": 3}, {"dry_run": "yes"}):
            assert (await call(s, "POST", f"{tap.url}/tap/consolidate", bad))[0] == 400, bad
        status, done = await call(s, "POST", f"{tap.url}/tap/consolidate", {"scope": "ann"})
        assert status == 200 and done["merged"] == 2 and not done["dry_run"]
        _, shown = await call(s, "GET", f"{tap.url}/tap/memories/{done['groups'][0]['into']}")
        assert [v["current"] for v in shown["history"]] == [False, False, True]
        assert await call(s, "GET", f"{tap.url}/tap/why") == (200, {"requests": [], "keep": 200, "keep_minutes": 60.0})
        status, body = await call(s, "GET", f"{tap.url}/tap/why/last")
        assert status == 404 and "error" in body
        assert (await call(s, "GET", f"{tap.url}/tap/why/r_unknown"))[0] == 404
        async with s.get(f"{tap.url}/tap/why") as unauthorised:
            assert unauthorised.status == 401


async def test_why_says_when_the_server_keeps_no_records(isolated_home: Path) -> None:
    async with (
        FakeAnthropic() as up,
        TapProxy(isolated_home, extra_toml="[why]\nkeep = 0", anthropic=up.url) as tap,
        aiohttp.ClientSession() as s,
    ):
        headers = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
        payload = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hello there"}]}
        async with s.post(f"{tap.url}/v1/messages", json=payload, headers=headers) as response:
            assert response.status == 200 and response.headers["x-tap-request-id"].startswith("r_")
        status, body = await call(s, "GET", f"{tap.url}/tap/why")
        assert status == 200 and body["requests"] == [] and body["keep"] == 0  # the page says why the list is empty
