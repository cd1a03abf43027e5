"""The admin API the web page pages, counts and searches with: totals on listings, scopes with their
counts, search across every scope, ISO-8601 timestamps on ingest, JSON 404s."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path

from tests.proxy.harness import TapProxy
from tests.proxy.test_admin_hardening import call


async def test_a_listing_says_its_total_offset_and_limit(isolated_home: Path) -> None:
    async with TapProxy(isolated_home) as tap:
        for n in range(7):
            tap.remember(f"Ana planted tree number {n} in the orchard", scope="ana")
        tap.remember("Bo rides a red bicycle", scope="bo")
        status, page = await call("GET", tap.url + "/tap/memories?scope=ana&limit=3&offset=3")
        _, everything = await call("GET", tap.url + "/tap/memories?limit=2")
        _, past = await call("GET", tap.url + "/tap/memories?scope=ana&limit=5&offset=5")
    assert status == 200
    assert (page["total"], page["offset"], page["limit"], len(page["memories"])) == (7, 3, 3, 3)
    assert (everything["total"], len(everything["memories"])) == (8, 2)
    assert (past["total"], len(past["memories"])) == (7, 2)


async def test_the_total_counts_the_same_filter(isolated_home: Path) -> None:
    async with TapProxy(isolated_home) as tap:
        first = tap.remember("Ana drinks black coffee", scope="ana")
        tap.remember("Ana said: see you at the market", scope="ana", kind="episode")
        assert tap.rt is not None
        tap.rt.memories.edit(first, content="Ana drinks green tea")
        _, statements = await call("GET", tap.url + "/tap/memories?scope=ana&layer=memories")
        _, excerpts = await call("GET", tap.url + "/tap/memories?scope=ana&layer=excerpts")
        _, versions = await call("GET", tap.url + "/tap/memories?scope=ana&layer=memories&all=1")
    assert statements["total"] == 1 and statements["memories"][0]["content"] == "Ana drinks green tea"
    assert excerpts["total"] == 1
    assert versions["total"] == 2


async def test_scopes_are_listed_with_their_counts(isolated_home: Path) -> None:
    async with TapProxy(isolated_home) as tap:
        tap.remember("Ana keeps bees", scope="ana")
        tap.remember("Ana sells honey", scope="ana")
        tap.remember("Ana said: the hive is loud", scope="ana", kind="episode")
        tap.remember("Bo rides a bicycle", scope="bo")
        status, body = await call("GET", tap.url + "/tap/scopes")
        unauthenticated, _ = await call("GET", tap.url + "/tap/scopes", headers={"Authorization": ""})
    assert status == 200 and unauthenticated == 401
    assert body == {
        "scopes": [
            {"scope": "ana", "memories": 2, "excerpts": 1},
            {"scope": "bo", "memories": 1, "excerpts": 0},
        ]
    }


async def test_search_without_a_scope_searches_every_scope(isolated_home: Path) -> None:
    async with TapProxy(isolated_home) as tap:
        tap.remember("Ana keeps bees in Sintra", scope="ana")
        tap.remember("Bo keeps bees on a rooftop in Porto", scope="bo")
        tap.remember("Cy collects stamps", scope="cy")
        _, everywhere = await call("GET", tap.url + "/tap/memories/search?q=who%20keeps%20bees")
        _, one = await call("GET", tap.url + "/tap/memories/search?q=who%20keeps%20bees&scope=bo")
    assert {r["memory"]["scope"] for r in everywhere["results"]} >= {"ana", "bo"}
    assert [r["memory"]["scope"] for r in one["results"]] == ["bo"]
    scores = [r["score"] for r in everywhere["results"]]
    assert scores == sorted(scores, reverse=True)


async def test_ingest_takes_iso_timestamps_and_names_the_formats(isolated_home: Path) -> None:
    def event(*stamps: object) -> dict[str, object]:
        messages = [
            {"role": "user", "content": f"I water the plants on day {i}", "timestamp": s} for i, s in enumerate(stamps)
        ]
        return {"scope": "ana", "conversation": "c1", "source": "manual", "messages": messages}

    async with TapProxy(isolated_home) as tap:
        ok, _ = await call(
            "POST",
            tap.url + "/tap/ingest",
            payload=event("2024-05-01T12:00:00Z", 1714564801, "2024-05-01T14:00:02+02:00"),
        )
        bad, body = await call("POST", tap.url + "/tap/ingest", payload=event("2024-05-01T12:00:00Z", "last tuesday"))
    assert ok == 202
    with contextlib.closing(sqlite3.connect(isolated_home / "queue.db")) as db:
        (turns,) = db.execute("SELECT turns FROM windows WHERE scope = 'ana'").fetchone()
    assert [turn["timestamp"] for turn in json.loads(turns)] == [1714564800.0, 1714564801.0, 1714564802.0]
    assert bad == 400
    assert "messages[1].timestamp" in body["error"] and "ISO-8601" in body["error"] and "POSIX seconds" in body["error"]


async def test_unknown_admin_paths_answer_json(isolated_home: Path) -> None:
    async with TapProxy(isolated_home) as tap:
        missing = await call("GET", tap.url + "/tap/conflicts-that-do-not-exist")
        memory = await call("GET", tap.url + "/tap/memories/m_nope")
    assert missing[0] == memory[0] == 404
    assert isinstance(missing[1], dict) and isinstance(memory[1]["error"], str)
