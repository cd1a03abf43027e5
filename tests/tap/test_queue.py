"""The durable queue: windows, idempotent chunks, retries, dead letters, crash recovery."""

from __future__ import annotations

from pathlib import Path

from tap.chunker import Turn
from tap.queue import ChunkQueue


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
