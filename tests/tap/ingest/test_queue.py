"""The durable queue: windows, idempotent chunks, retries, dead letters, crash recovery."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tap.ingest.chunker import Turn
from tap.ingest.queue import ChunkQueue


def turns(n: int, start: int = 0, words: int = 40) -> list[Turn]:
    return [
        Turn(
            id=f"t{i}",
            role="user" if i % 2 == 0 else "assistant",
            speaker="Ann" if i % 2 == 0 else "Bot",
            text=" ".join(f"word{i}x{j}" for j in range(words)),
            timestamp=1_700_000_000 + i,
        )
        for i in range(start, start + n)
    ]


def test_small_exchanges_wait_in_a_window_until_full_or_flushed(tmp_path: Path) -> None:
    q = ChunkQueue(tmp_path / "q.db", chunk_tokens=500, overlap_tokens=100)
    assert q.add_turns("s", "c", "proxy", turns(2)) == 2
    assert q.counts()["queued"] == 0 and q.counts()["turns_waiting"] == 2
    assert q.flush() == 1
    claimed = q.claim()
    assert claimed is not None and [t.id for t in claimed.chunk.turns] == ["t0", "t1"]
    assert q.counts()["turns_waiting"] == 0


def test_long_conversations_become_overlapping_chunks_of_about_n_tokens(tmp_path: Path) -> None:
    q = ChunkQueue(tmp_path / "q.db", chunk_tokens=500, overlap_tokens=100)
    for i in range(0, 40, 2):
        q.add_turns("s", "c", "proxy", turns(2, start=i, words=8))
    q.flush()
    chunks = []
    while (claimed := q.claim()) is not None:
        chunks.append(claimed.chunk)
        q.done(claimed.chunk.id, "ok")
    assert len(chunks) >= 4
    assert all(c.tokens <= 500 for c in chunks)
    covered = [t.id for c in chunks for t in c.turns]
    assert set(covered) == {f"t{i}" for i in range(40)}
    for a, b in zip(chunks, chunks[1:], strict=False):
        assert {t.id for t in a.turns} & {t.id for t in b.turns}, "consecutive chunks overlap"


def test_duplicate_delivery_adds_nothing(tmp_path: Path) -> None:
    q = ChunkQueue(tmp_path / "q.db")
    assert q.add_turns("s", "c", "proxy", turns(30)) == 30
    before = q.counts()
    assert q.add_turns("s", "c", "proxy", turns(30)) == 0
    assert q.counts() == before


def test_state_survives_reopening_and_running_chunks_return_to_the_queue(tmp_path: Path) -> None:
    q = ChunkQueue(tmp_path / "q.db")
    q.add_turns("s", "c", "proxy", turns(30))
    claimed = q.claim()
    assert claimed is not None
    q.close()  # as if the process died mid-extraction
    reopened = ChunkQueue(tmp_path / "q.db")
    again = reopened.claim()
    assert again is not None and again.chunk.id == claimed.chunk.id


def test_retries_back_off_then_dead_letter(tmp_path: Path) -> None:
    clock = [1000.0]
    q = ChunkQueue(tmp_path / "q.db", now=lambda: clock[0])
    q.add_turns("s", "c", "proxy", turns(2))
    q.flush()
    claimed = q.claim()
    assert claimed is not None
    assert not q.retry(claimed.chunk.id, "boom 1", delay_s=30, max_attempts=2)
    assert q.claim() is None
    clock[0] += 31
    again = q.claim()
    assert again is not None and again.attempts == 1
    assert q.retry(again.chunk.id, "boom 2", delay_s=60, max_attempts=2)
    (dead,) = q.dead_letters()
    assert dead["error"] == "boom 2" and dead["attempts"] == 2
    assert q.requeue_dead() == 1 and q.claim() is not None


def rows(q: ChunkQueue, scope: str) -> tuple[int, int]:
    """(windows, chunks) the queue's file holds for a scope, read straight from SQLite."""
    with sqlite3.connect(q.path) as db:
        windows = db.execute("SELECT count(*) FROM windows WHERE scope = ?", (scope,)).fetchone()[0]
        chunks = db.execute("SELECT count(*) FROM chunks WHERE scope = ?", (scope,)).fetchone()[0]
    return int(windows), int(chunks)


def test_drop_scope_removes_only_that_scopes_windows_and_chunks(tmp_path: Path) -> None:
    clock = [1000.0]
    q = ChunkQueue(tmp_path / "q.db", now=lambda: clock[0])
    for scope in ("ann", "bob"):
        q.add_turns(scope, "c1", "telegram", turns(30))  # several chunks queued, the rest in a window
        q.add_turns(scope, "c2", "telegram", turns(2))  # a window only
        clock[0] += 1  # ann's chunks are older, so they are claimed first
    dead = q.claim()
    assert dead is not None and dead.chunk.scope == "ann"
    q.kill(dead.chunk.id, "bad request")
    later = q.claim()
    assert later is not None and later.chunk.scope == "ann"
    q.retry(later.chunk.id, "timeout", delay_s=600, max_attempts=5)  # queued, not ready yet
    bob_before = rows(q, "bob")
    assert rows(q, "ann")[1] >= 3 and bob_before[0] == 2 and bob_before[1] >= 2

    dropped = q.drop_scope("ann")

    assert dropped == sum(bob_before)  # the same conversations were queued for both
    assert rows(q, "ann") == (0, 0) and rows(q, "bob") == bob_before
    assert q.dead_letters() == []
    clock[0] += 3600
    q.flush()
    claimed = []
    while (item := q.claim()) is not None:
        claimed.append(item.chunk.scope)
        q.done(item.chunk.id, "ok")
    assert claimed and set(claimed) == {"bob"}
    assert q.add_turns("ann", "c1", "telegram", turns(30)) == 0  # old turns sent again stay forgotten


def test_a_chunk_claimed_when_its_scope_is_dropped_settles_without_a_trace(tmp_path: Path) -> None:
    clock = [1000.0]
    q = ChunkQueue(tmp_path / "q.db", now=lambda: clock[0])
    q.add_turns("ann", "c", "telegram", turns(30))
    clock[0] += 1
    q.add_turns("bob", "c", "telegram", turns(30))
    first, second = q.claim(), q.claim()
    assert first is not None and second is not None and first.chunk.scope == second.chunk.scope == "ann"
    assert q.in_flight("ann") == 0

    q.drop_scope("ann")

    assert q.in_flight("ann") == 2 and q.in_flight("bob") == 0
    assert q.counts()["running"] == 2  # still being extracted, as far as status is concerned
    assert not q.wait_settled("ann", timeout_s=0.05, poll_s=0.01)
    q.done(first.chunk.id, "2 added")  # the worker reports back: nothing is recorded
    assert not q.retry(second.chunk.id, "timeout", delay_s=0, max_attempts=1)  # not dead: gone
    assert q.in_flight("ann") == 0 and q.wait_settled("ann", timeout_s=0.0)
    assert rows(q, "ann") == (0, 0) and q.dead_letters() == []
    assert q.counts()["done"] == 0 and q.counts()["running"] == 0
    for item in iter(q.claim, None):
        assert item.chunk.scope == "bob"


def test_reports_on_unknown_chunk_ids_do_nothing(tmp_path: Path) -> None:
    q = ChunkQueue(tmp_path / "q.db")
    q.add_turns("s", "c", "proxy", turns(30))
    before = q.counts()
    q.done("no-such-chunk", "ok")
    assert not q.retry("no-such-chunk", "boom", delay_s=0, max_attempts=1)
    q.postpone("no-such-chunk", 0.0, "budget")
    q.kill("no-such-chunk", "bad")
    assert q.counts() == before and q.dead_letters() == []


def test_drop_scope_of_a_claimed_chunk_then_a_crash_leaves_nothing_behind(tmp_path: Path) -> None:
    q = ChunkQueue(tmp_path / "q.db")
    q.add_turns("ann", "c", "telegram", turns(30))
    claimed = q.claim()
    assert claimed is not None
    q.drop_scope("ann")
    with sqlite3.connect(q.path) as db:
        (payload,) = db.execute("SELECT payload FROM chunks WHERE id = ?", (claimed.chunk.id,)).fetchone()
    assert payload == b""  # the forgotten text is not kept while the worker finishes
    q.close()  # the process dies mid-extraction
    reopened = ChunkQueue(tmp_path / "q.db")
    assert rows(reopened, "ann") == (0, 0) and reopened.in_flight("ann") == 0 and reopened.claim() is None
