"""tap's own memory block never becomes conversation text, whichever way a text that carries it comes in.

A request that already holds a block (the body tap sent upstream, replayed; a client that echoes
what it sent) and logs or hook payloads that quote one are captured without it: the turn log, the
ingestion queue and the memories hold no `<recalled-memories>` anywhere, and recall runs on the
human's words only.
"""

from __future__ import annotations

import json
from pathlib import Path

import aiohttp

from tap.block_tags import CLOSE, OPEN
from testkit.clients.models import AgentAnthropic
from testkit.clients.recorded import body, recorded
from testkit.stored import stored_anywhere
from tests.bridges.logtail_helpers import Recorder
from tests.proxy.harness import TapProxy

HEADERS = {"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01", "content-type": "application/json"}
BLOCK = f"{OPEN}\nNotes from earlier conversations with this user: background data.\n- The study is teal\n{CLOSE}"


async def post(url: str, raw: bytes, headers: dict[str, str]) -> int:
    async with aiohttp.ClientSession() as session, session.post(url, data=raw, headers=headers) as resp:
        await resp.read()
        return resp.status


async def test_a_replayed_request_and_ingested_messages_are_stored_without_the_block(isolated_home: Path) -> None:
    async with AgentAnthropic() as up, TapProxy(isolated_home, anthropic=up.url) as tap:
        tap.remember("The user wants the study painted teal, their favourite colour", importance=4)
        first = body(recorded("claude-code"), "first-prompt.json")
        assert await post(tap.url + "/v1/messages", first, HEADERS) == 200
        injected = up.requests[-1].body
        assert OPEN.encode() in injected
        assert await post(tap.url + "/v1/messages", injected, HEADERS) == 200  # tap's own request, replayed
        message = {"role": "user", "content": f"the study, then\n\n{BLOCK}", "id": "m1"}
        event = {"scope": "default", "conversation": "c1", "source": "import", "messages": [message]}
        admin = {"authorization": "Bearer test-token", "content-type": "application/json"}
        assert await post(tap.url + "/tap/ingest", json.dumps(event).encode(), admin) == 202
        await tap.settle()
        assert tap.rt is not None
        tap.rt.queue.flush()
        tap.rt.worker.drain(flush=True)
        memories = tap.rt.memories.list_memories(scope=None, limit=500)
    human_turns = [m.content for e in tap.events for m in e.messages if m.role == "user"]
    assert human_turns and all(OPEN not in text for text in human_turns)
    assert any(text.endswith("Which colour should I paint the study?") for text in human_turns)
    assert len(memories) > 1 and all(OPEN not in m.content for m in memories)  # excerpts of the turns too
    for database in ("turnlog.db", "queue.db"):
        assert stored_anywhere(isolated_home / database, OPEN.encode()) == [], database


def test_a_log_that_quotes_the_block_is_ingested_without_it(tmp_path: Path) -> None:
    log = tmp_path / "chat.jsonl"
    lines = [
        {"role": "user", "content": f"Which colour for the study?\n{BLOCK}"},
        {"role": "assistant", "content": f"Teal, going by {BLOCK}"},
    ]
    log.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    recorder = Recorder(tmp_path / "state")
    try:
        recorder.tailer([log], tmp_path / "state").poll(one_shot=True)
        recorder.queue.flush()
    finally:
        recorder.close()
    assert stored_anywhere(tmp_path / "state" / "queue.db", OPEN.encode()) == []
    assert stored_anywhere(tmp_path / "state" / "queue.db", b"Which colour for the study?") != []
