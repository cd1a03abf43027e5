"""What tap keeps of a conversation, and how it goes away: the turn log is scrubbed before it is
written and pruned after `[data] retention_days`; forgetting a memory removes its source turns;
forgetting a scope removes everything of it from every file tap keeps.

Every check reads the files themselves (SQLite, byte for byte), not tap's own view of them.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from bridges.logtail.progress_db import FileRecord, OffsetStore
from bridges.telegram.db import TelegramDB
from tap.cli.main import main
from tap.config import LoadedConfig, parse_config
from tap.errors import StoreError
from tap.ingest.capture import Exchange, TurnLog
from tap.ingest.chunker import Turn
from tap.ingest.retention import prune
from tap.records import IngestEvent, Message
from tap.wiring.runtime import Runtime, open_runtime
from testkit.fakes import fake_adapters

SECRET = "sk-ant-api03-Xy7vQ2mN9pL4kR8sT1uW6zA3bC5dE0fG"
SCOPE = "ann"


@pytest.fixture
def rt(isolated_home: Path) -> Iterator[Runtime]:
    opened = open_runtime(
        LoadedConfig(config=parse_config(""), path=None, data_dir=isolated_home), adapters=fake_adapters
    )
    yield opened
    opened.close()


def file_bytes(home: Path, *names: str) -> bytes:
    """Everything on disk of the named SQLite files (their -wal too)."""
    out = b""
    for name in names:
        for path in home.glob(name + "*"):
            out += path.read_bytes()
    return out


def exchange(conversation: str, user: str, reply: str, *, scope: str = SCOPE, n: int = 1) -> Exchange:
    return Exchange(
        scope=scope,
        conversation=conversation,
        dialect="anthropic",
        user_turn_id=f"u-{conversation}-{n}",
        user_text=user,
        reply_turn_id=f"a-{conversation}-{n}",
        reply_text=reply,
        status=200,
        complete=True,
        started_at=time.time(),
        finished_at=time.time(),
    )


def capture(rt: Runtime, ex: Exchange) -> None:
    """What tap.ingest.capture.Capture.record does: the turn log, then the ingestion entry point."""
    rt.turn_log.append(ex)
    rt.ingestor.ingest(ex.to_event())


def test_the_turn_log_is_scrubbed_before_it_is_written(isolated_home: Path) -> None:
    log = TurnLog(isolated_home / "turnlog.db")
    text = f"My key is {SECRET} and <private>my diary says I am tired</private> I live in Porto."
    log.append(exchange("c1", text, f"Your password: hunter22 ok, key {SECRET}"))
    log.close()
    raw = file_bytes(isolated_home, "turnlog.db")
    assert SECRET.encode() not in raw and b"diary" not in raw and b"hunter22" not in raw
    assert b"I live in Porto" in raw
    reopened = TurnLog(isolated_home / "turnlog.db")
    (logged,) = reopened.recent()
    reopened.close()
    assert "[REDACTED]" in logged.user_text and "<private>" not in logged.user_text


def test_forgetting_a_memory_removes_its_source_turns(rt: Runtime, isolated_home: Path) -> None:
    capture(rt, exchange("c1", "I live in Porto.", "Porto is lovely.", n=1))
    capture(rt, exchange("c1", "I work as a nurse at Santa Maria.", "A demanding job.", n=2))
    rt.worker.drain()
    memories = rt.memories.list_memories(scope=SCOPE, limit=100, excerpts=False)
    porto = next(m for m in memories if "Porto" in m.content)
    assert "u-c1-1" in porto.sources
    excerpts = rt.memories.list_memories(scope=SCOPE, limit=100, excerpts=True)
    assert any("Porto" in e.content for e in excerpts)

    forgotten = rt.memories.forget_memory(porto.id)

    assert porto.id in forgotten.deleted and forgotten.excerpts
    assert forgotten.source_turns["turn log"] == 1
    left = rt.memories.list_memories(scope=SCOPE, limit=100, all_versions=True)
    assert not any("Porto" in m.content for m in left)
    assert any("nurse" in m.content for m in left)  # the other turn's memories stay
    assert [e.user_text for e in rt.turn_log.recent(scope=SCOPE)] == ["I work as a nurse at Santa Maria."]
    assert b"Porto" not in file_bytes(isolated_home, "turnlog.db", "queue.db", "lexical-")
    assert all("Porto" not in m.content for m, _ in rt.memories.search("Porto", scope=SCOPE))


def test_forgetting_a_memory_takes_its_turns_out_of_the_queue_before_extraction(rt: Runtime) -> None:
    capture(rt, exchange("c2", "I live in Porto.", "Nice.", n=1))
    manual = rt.memories.add(scope=SCOPE, content="The user lives in Porto.", sources=["u-c2-1"], conversation="c2")
    rt.memories.forget_memory(manual.id)
    rt.worker.drain()  # the window is flushed and extracted after the forget: nothing of Porto comes back
    assert not any("Porto" in m.content for m in rt.memories.list_memories(scope=SCOPE, limit=100, all_versions=True))


def test_asking_in_the_chat_to_forget_something_removes_it_from_every_file(rt: Runtime, isolated_home: Path) -> None:
    capture(rt, exchange("c4", "My address is 12 Rua Augusta, Lisbon.", "Noted.", n=1))
    capture(rt, exchange("c4", "I work as a nurse at Santa Maria.", "A demanding job.", n=2))
    rt.worker.drain()
    assert any("Augusta" in m.content for m in rt.memories.list_memories(scope=SCOPE, limit=100, excerpts=True))

    capture(rt, exchange("c4", "please forget my address, I don't want you storing that", "Done.", n=3))
    rt.worker.drain()

    left = rt.memories.list_memories(scope=SCOPE, limit=100, excerpts=True, all_versions=True)
    assert not any("Augusta" in m.content for m in left), [m.content for m in left]
    assert any("nurse" in m.content for m in left)  # what was not asked about stays
    assert not any("forget" in m.content.lower() for m in left if m.kind != "episode")  # the request is no fact
    for name in ("turnlog.db", "queue.db", "lexical-"):
        assert b"Augusta" not in file_bytes(isolated_home, name), name


def test_a_request_to_forget_that_fails_is_carried_out_when_its_chunk_is_redone(isolated_home: Path) -> None:
    loaded = LoadedConfig(config=parse_config("[extract]\nbackoff_s = 0"), path=None, data_dir=isolated_home)
    rt = open_runtime(loaded, adapters=fake_adapters)
    try:
        capture(rt, exchange("c6", "My address is 12 Rua Augusta, Lisbon.", "Noted.", n=1))
        rt.worker.drain()
        forget = rt.worker.extraction.forget
        calls: list[str] = []

        def store_down_once(memory_id: str) -> Sequence[str]:
            calls.append(memory_id)
            if len(calls) == 1:
                raise StoreError("the store is down")
            assert forget is not None
            return forget(memory_id)

        rt.worker.extraction.forget = store_down_once
        capture(rt, exchange("c6", "please forget my address", "Done.", n=2))
        rt.worker.drain()
        assert len(calls) > 1  # the chunk was redone and asked again
        left = rt.memories.list_memories(scope=SCOPE, limit=100, excerpts=True, all_versions=True)
        assert not any("Augusta" in m.content for m in left), [m.content for m in left]
    finally:
        rt.close()


def test_a_sentence_that_only_sounds_like_forgetting_forgets_nothing(rt: Runtime) -> None:
    capture(rt, exchange("c5", "My keys are always in the blue bowl by the door.", "Good habit.", n=1))
    capture(rt, exchange("c5", "I always forget my keys anyway, and delete my branch before I push.", "Ha.", n=2))
    rt.worker.drain()
    assert any("blue bowl" in m.content for m in rt.memories.list_memories(scope=SCOPE, limit=100, excerpts=True))


def test_forgetting_a_scope_empties_every_file(rt: Runtime, isolated_home: Path) -> None:
    marker = "Zanzibarian"
    capture(rt, exchange("c3", f"My cat is called {marker}.", "Cute name.", n=1))
    capture(rt, exchange("other", "I live in Berlin.", "Nice.", scope="bob", n=1))
    rt.worker.drain()
    capture(rt, exchange("c3", f"{marker} likes fish.", "Cats do.", n=2))  # still waiting in the queue
    rt.memories.add(scope=SCOPE, content=f"{marker} is a cat.")
    offsets = OffsetStore(isolated_home / "logtail.db")
    for ino, scope in ((1, SCOPE), (2, "bob")):
        offsets.save(
            FileRecord(
                dev=1,
                ino=ino,
                path=f"/logs/{scope}.jsonl",
                head_len=1,
                head_hash="h",
                format="jsonl",
                scope=scope,
                conversation=scope,
            )
        )
    offsets.close()
    telegram = TelegramDB(isolated_home / "telegram.db")
    telegram.add_turn(SCOPE, 1, 111, "Ann", f"{marker} again")
    telegram.close()
    assert marker.encode() in file_bytes(isolated_home, "turnlog.db", "queue.db", "lexical-")

    removed = rt.memories.erase_scope(SCOPE)

    assert removed["memories"] >= 2 and removed["turn log"] == 2 and removed["queue"] >= 1
    assert removed["log-tail state"] == 1 and removed["telegram chat history"] == 1
    assert marker.encode() not in file_bytes(isolated_home, "turnlog.db", "queue.db", "lexical-", "telegram.db")
    assert rt.memories.list_memories(scope=SCOPE, limit=100, all_versions=True) == []
    assert rt.memories.search(marker, scope=SCOPE) == []
    with sqlite3.connect(isolated_home / "logtail.db") as db:
        assert [r[0] for r in db.execute("SELECT scope FROM files")] == ["bob"]
    assert rt.turn_log.recent(scope="bob") and rt.memories.list_memories(scope="bob", limit=10)
    rt.ingestor.ingest(exchange("c3", f"My cat is called {marker}.", "Cute name.", n=1).to_event())
    assert rt.queue.counts()["turns_waiting"] == 0  # the old turns are not taken in again


def test_cli_forget_scope_needs_one_target(rt: Runtime) -> None:
    rt.close()
    runner = CliRunner()
    both = runner.invoke(main, ["memories", "forget", "m_1", "--scope", SCOPE])
    neither = runner.invoke(main, ["memories", "forget"])
    assert both.exit_code == neither.exit_code == 2
    runner.invoke(main, ["memories", "add", "Ann keeps bees", "--scope", SCOPE])
    result = runner.invoke(main, ["memories", "forget", "--scope", SCOPE, "--yes", "--json"], catch_exceptions=False)
    assert result.exit_code == 0 and json.loads(result.stdout)["removed"]["memories"] == 1
    listed = runner.invoke(main, ["memories", "list", "--scope", SCOPE, "--json"])
    assert json.loads(listed.stdout) == []


def test_retention_prunes_old_exchanges_and_extracted_chunks(rt: Runtime, isolated_home: Path) -> None:
    capture(rt, exchange("old", "I live in Porto.", "Nice.", n=1))
    rt.worker.drain()
    assert rt.queue.counts()["done"] >= 1 and rt.turn_log.count() == 1
    done = rt.queue.counts()["done"]
    assert prune(rt.turn_log, rt.queue, 30, now=time.time() + 31 * 86400) == {"turn log": 1, "queue": done}
    assert rt.turn_log.count() == 0 and rt.queue.counts()["done"] == 0
    assert b"Porto." not in file_bytes(isolated_home, "turnlog.db")
    assert prune(rt.turn_log, rt.queue, 30, now=time.time() + 31 * 86400) == {"turn log": 0, "queue": 0}
    capture(rt, exchange("new", "I work at Santa Maria.", "Ok.", n=1))
    assert prune(rt.turn_log, rt.queue, 30) == {"turn log": 0, "queue": 0}  # fresh ones stay
    assert rt.turn_log.count() == 1


def test_ingested_timestamps_out_of_range_are_stored_as_unknown(rt: Runtime) -> None:
    event = IngestEvent(
        scope=SCOPE,
        conversation="ts",
        source="logtail",
        messages=[Message(role="user", content="I moved to Lisbon in May.", id="x1", timestamp=1e300)],
    )
    rt.ingestor.ingest(event)
    rt.worker.drain()
    found = rt.memories.list_memories(scope=SCOPE, limit=10, all_versions=True)
    assert found and all(0 <= m.valid_from < 4e9 for m in found)
    assert "Lisbon" in rt.memories.recall("Where do I live?", scope=SCOPE).block


def test_chunks_queued_before_a_pattern_existed_are_scrubbed_again(rt: Runtime) -> None:
    old = "The wifi password for the office is Blue-Falcon-77, and I live in Porto."
    rt.queue.add_turns(SCOPE, "queued-long-ago", "hook", [Turn(id="t-old", role="user", speaker="User", text=old)])
    rt.worker.drain()
    stored = rt.memories.list_memories(scope=SCOPE, limit=100, all_versions=True)
    dump = " ".join(m.content + " " + m.context for m in stored)
    assert "Porto" in dump and "Blue-Falcon-77" not in dump
