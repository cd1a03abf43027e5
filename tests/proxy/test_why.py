"""Why was this injected? A real `tap serve` in front of a fake Anthropic upstream, then `tap why`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from click.testing import CliRunner

from tap.cli.main import main
from tap.config import parse_config
from tap.recall.why import Candidate, RecallTrace, RequestNote, WhyLog
from tap.records import Memory, Recalled, RecallResult
from testkit.serve_process import ServeProcess, admin
from testkit.upstreams import FakeAnthropic
from testkit.waits import until

SECRET = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789"
QUESTION = f"Where does Ann live in Lisbon, and what does she love there? (my key is {SECRET})"


def recall_process(server: ServeProcess) -> dict[str, Any]:
    found: dict[str, Any] = admin(server, "GET", "/tap/status")["recall_process"]
    return found


def seed(server: ServeProcess) -> dict[str, str]:
    def add(text: str, **fields: Any) -> str:
        return str(admin(server, "POST", "/tap/memories", {"scope": "ann", "content": text, **fields})["id"])

    ids = {
        "lives": add("Ann lives in Lisbon, in a flat near the river", importance=5),
        "lives-again": add("Ann lives in Lisbon, in a flat near the river", importance=5),  # stored twice
        "tiles": add("Ann loves the blue tiles on the old houses of Lisbon"),
        "food": add("Ann loves the custard tarts from the bakery in Lisbon"),
        "walks": add("Ann loves long walks along the river in Lisbon at sunset"),
        "cat": add("Ann's cat is called Pixel"),  # the request shows it: visible
        "porto": add("Ann lives in Porto, near the old bridge"),
        "alfama": add("Ann loves the tram that climbs to Alfama in Lisbon"),
    }
    ids["moved"] = admin(server, "PATCH", f"/tap/memories/{ids['porto']}", {"content": "Ann moved from Porto"})["id"]
    admin(server, "POST", f"/tap/memories/{ids['alfama']}/archive", {})
    return ids


def why(*args: str) -> Any:
    result = CliRunner().invoke(main, ["why", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.slow
async def test_tap_why_last_names_the_injected_memories_and_those_that_missed(
    isolated_home: Path, tmp_path: Path
) -> None:
    async with FakeAnthropic() as up:
        config = tmp_path / "tap.toml"
        config.write_text(f'[upstream]\nanthropic = "{up.url}"\n[recall]\nbudget_tokens = 90\n')
        server = await asyncio.to_thread(ServeProcess(isolated_home, config=config).start)
        try:
            await until(lambda: recall_process(server)["ready"], what="the recall process ready")
            ids = await asyncio.to_thread(seed, server)
            payload = {
                "model": "m",
                "max_tokens": 5,
                "messages": [
                    {"role": "user", "content": "Ann's cat is called Pixel"},
                    {"role": "assistant", "content": "Lovely name."},
                    {"role": "user", "content": QUESTION},
                ],
            }
            headers = {"x-api-key": "k", "anthropic-version": "2023-06-01", "x-tap-scope": "ann"}
            async with aiohttp.ClientSession() as session:
                async with session.post(server.url + "/v1/messages", json=payload, headers=headers) as response:
                    assert response.status == 200
                    request_id = response.headers["x-tap-request-id"]
                    recalled = int(response.headers["x-tap-recalled"])
                    await response.read()
                async with session.get(server.url + "/v1/models", headers=headers) as passthrough:
                    assert passthrough.headers["x-tap-request-id"].startswith("r_")
                    await passthrough.read()  # the whole answer: its log line is written once it is sent
            assert request_id.startswith("r_") and recalled >= 1
            assert recall_process(server)["answered"] == 1  # recalled (and traced) in the recall process
            record = await wait_for_record(request_id)
            assert record["request_id"] == request_id and record["scope"] == "ann" and record["upstream_status"] == 200
            assert "Where does Ann live in Lisbon" in record["query"] and SECRET not in record["query"]  # scrubbed
            outcomes = {c["id"]: c["outcome"] for c in record["candidates"]}
            injected = [c for c in record["candidates"] if c["outcome"] == "injected"]
            assert len(injected) == recalled == record["injected"]
            assert {outcomes[ids["lives"]], outcomes[ids["lives-again"]]} == {"injected", "repeat"}  # one line
            assert outcomes[ids["cat"]] == "visible"  # the model already sees it in the request
            assert "over-budget" in outcomes.values()  # a 90-token block holds two of the relevant ones
            assert outcomes[ids["porto"]] == "superseded" and outcomes[ids["alfama"]] == "archived"
            for c in record["candidates"]:
                assert isinstance(c["recency"], float) and isinstance(c["importance"], float)
                assert c["vector"] is not None or c["lexical"] is not None
            text = await asyncio.to_thread(why, "--last")  # passthrough requests leave a log line, no record
            assert f"request {request_id} " in text
            assert "Ann lives in Lisbon, in a flat near the river" in text and "→ in the block" in text
            assert "→ left out: a line in the block says the same already" in text
            assert (
                "the model already sees it in the request" in text
                and "relevant, but no room was left for it in the block" in text
            )
            assert f"an old version by {ids['moved']}" in text
            listed = json.loads(await asyncio.to_thread(why, "--list", "5", "--json"))["requests"]
            assert listed[0]["request_id"] == request_id and listed[0]["injected"] == recalled
        finally:
            output = await asyncio.to_thread(server.stop)
    line = next(line for line in output.splitlines() if f"request {request_id} " in line)
    assert "POST /v1/messages scope=ann conversation=" in line and f"injected={recalled}" in line
    assert "recall_ms=" in line and "degraded=- status=200 duration_ms=" in line
    assert any(" GET /v1/models scope=- " in line for line in output.splitlines())


async def wait_for_record(request_id: str) -> dict[str, Any]:
    """The record is kept right after the response, on a worker thread: wait for it."""

    async def kept() -> dict[str, Any] | None:
        try:
            record: dict[str, Any] = json.loads(await asyncio.to_thread(why, request_id, "--json"))
        except Exception:  # not recorded yet: `tap why` exits 1
            return None
        return record

    return await until(kept, what=f"the record of request {request_id}")


def test_why_needs_a_running_server(isolated_home: Path) -> None:
    result = CliRunner().invoke(main, ["why", "--last"])
    assert result.exit_code == 1 and "no tap serve is running" in result.stderr


def note(scope: str, query: str, memory: Memory | None = None) -> RequestNote:
    recorded = RequestNote(f"r_{scope}_{len(query)}", path="/v1/messages", scope=scope)
    recorded.trace = RecallTrace()
    recorded.trace.query = query
    if memory is not None:
        recorded.trace.packed(
            [(memory, 1.0)], RecallResult(block="b", tokens=1, memories=[Recalled(memory=memory, score=1.0, tokens=1)])
        )
    return recorded


def test_records_are_bounded_in_number_and_time_and_can_be_forgotten() -> None:
    clock = [1000.0]
    log = WhyLog(parse_config("[why]\nkeep = 2\nkeep_minutes = 1").why, now=lambda: clock[0])
    first = note("a", "x")
    first.at = clock[0]
    log.record(first, 200, 1.0)
    for scope, query in (("b", "yy"), ("c", "zzz")):
        n = note(scope, query, Memory(id=f"m_{scope}", scope=scope, content="c"))
        n.at = clock[0]
        log.record(n, 200, 1.0)
    assert [r.scope for r in log.recent(10)] == ["c", "b"]  # the oldest went: at most `keep`
    assert log.forget_memories(["m_b"]) == 1 and [r.scope for r in log.recent(10)] == ["c", "b"]
    assert [c.content for r in log.recent(10) for c in r.candidates] == ["c", "forgotten"]
    assert log.forget_memories(["m_c"], ["zzz"]) == 1 and log.recent(1)[0].query == "forgotten"
    assert log.forget_scope("c") == 1 and [r.scope for r in log.recent(10)] == ["b"]
    assert log.forget_scope("b") == 1 and log.last() is None
    kept = note("d", "w")
    kept.at = clock[0]
    log.record(kept, 200, 1.0)
    clock[0] += 61
    assert log.get(kept.request_id) is None  # older than keep_minutes


def test_no_records_are_kept_with_keep_zero() -> None:
    log = WhyLog(parse_config("[why]\nkeep = 0").why)
    assert not log.enabled


class CountedTrace(RecallTrace):
    """A trace that counts how often its candidates are weighed."""

    def __init__(self) -> None:
        super().__init__()
        self.weighed = 0

    def candidates(self, limit: int) -> list[Candidate]:
        self.weighed += 1
        return super().candidates(limit)


def test_a_record_is_made_when_first_read_and_only_once() -> None:
    """Keeping a request costs the event loop nothing but storing its note: the candidates are
    weighed (and the query scrubbed) on the first read, and later reads get the same record."""
    log = WhyLog(parse_config("").why)
    memory = Memory(id="m_a", scope="a", content="c")
    kept = RequestNote("r_a", path="/v1/messages", scope="a")
    kept.trace = trace = CountedTrace()
    trace.query = "my key is sk-ant-api03-" + "x" * 40
    trace.packed(
        [(memory, 1.0)], RecallResult(block="b", tokens=1, memories=[Recalled(memory=memory, score=1.0, tokens=1)])
    )
    log.record(kept, 200, 1.0)
    assert trace.weighed == 0
    first = log.get("r_a")
    assert first is not None and trace.weighed == 1
    assert "sk-ant-api03" not in first.query and [c.id for c in first.candidates] == ["m_a"]
    assert log.last() is first and log.recent(5) == [first] and trace.weighed == 1


def test_a_step_that_reused_a_block_shows_its_recall_even_once_that_record_is_gone() -> None:
    """An agent-loop step reuses its turn's block: its record shows the recall's candidates, taken
    from the request that recalled, which may be pruned before the step's record is read."""
    log = WhyLog(parse_config("[why]\nkeep = 1").why)
    memory = Memory(id="m_a", scope="a", content="c")
    log.record(note("a", "the turn", memory), 200, 1.0)
    step = RequestNote("r_step", path="/v1/messages", scope="a", reused_from="r_a_8")
    log.record(step, 200, 1.0)
    assert log.get("r_a_8") is None  # pruned: at most one record is kept
    shown = log.get("r_step")
    assert shown is not None and shown.reused_from == "r_a_8" and [c.id for c in shown.candidates] == ["m_a"]


@pytest.mark.slow
async def test_forgetting_a_memory_keeps_the_records_and_shows_it_forgotten(
    isolated_home: Path, tmp_path: Path
) -> None:
    """Forgetting a memory takes its text out of the records of `tap why` and keeps the rest: the
    candidate shows "forgotten", and so does the query of the request whose turn it came from."""
    async with FakeAnthropic() as up:
        config = tmp_path / "tap.toml"
        config.write_text(f'[upstream]\nanthropic = "{up.url}"\n[extract]\nflush_after_s = 0.0\n')
        server = await asyncio.to_thread(ServeProcess(isolated_home, config=config).start)
        headers = {"x-api-key": "k", "anthropic-version": "2023-06-01", "x-tap-scope": "bo"}

        async def ask(text: str, conversation: str) -> str:
            payload = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": text}]}
            async with aiohttp.ClientSession() as session:
                async with session.post(
                    server.url + "/v1/messages", json=payload, headers={**headers, "x-tap-conversation": conversation}
                ) as response:
                    assert response.status == 200
                    await response.read()
                    return response.headers["x-tap-request-id"]

        def made_of(words: str, layer: str) -> str | None:
            listed = admin(server, "GET", f"/tap/memories?scope=bo&layer={layer}&limit=100")["memories"]
            return next((m["id"] for m in listed if words in m["content"]), None)

        try:
            sintra = await asyncio.to_thread(
                lambda: admin(server, "POST", "/tap/memories", {"scope": "bo", "content": "Bo keeps bees in Sintra"})[
                    "id"
                ]
            )
            bike = await asyncio.to_thread(
                lambda: admin(
                    server, "POST", "/tap/memories", {"scope": "bo", "content": "Bo's bees fly past his green bike"}
                )["id"]
            )
            said = "I moved my beehives to Cascais last spring."
            first = await ask(said, "c-1")
            moved = await until(lambda: asyncio.to_thread(made_of, "Cascais", "memories"), what="its statement")
            excerpt = await asyncio.to_thread(made_of, "Cascais", "excerpts")
            second = await ask("Where does Bo keep his bees?", "c-2")
            record = await wait_for_record(second)
            assert {sintra, bike, moved, excerpt} <= {c["id"] for c in record["candidates"]}
            await asyncio.to_thread(admin, server, "DELETE", f"/tap/memories/{bike}")
            await asyncio.to_thread(admin, server, "DELETE", f"/tap/memories/{moved}")  # its excerpt goes too
            kept = json.loads(await asyncio.to_thread(why, second, "--json"))  # the record is still there
            contents = {c["id"]: c["content"] for c in kept["candidates"]}
            assert contents[bike] == contents[moved] == contents[excerpt] == "forgotten"
            assert contents[sintra] == "Bo keeps bees in Sintra"
            assert kept["query"] == "Where does Bo keep his bees?"
            earlier = json.loads(await asyncio.to_thread(why, first, "--json"))
            assert earlier["query"] == "forgotten"  # its turn was the forgotten statement's source
            listed = json.loads(await asyncio.to_thread(why, "--list", "5", "--json"))["requests"]
            assert {r["request_id"] for r in listed} >= {first, second}
            text = await asyncio.to_thread(why, second)
            assert "Cascais" not in text and "green bike" not in text and "forgotten" in text
        finally:
            await asyncio.to_thread(server.stop)
