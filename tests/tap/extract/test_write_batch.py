"""Batched extraction: buffered writes read like direct writes, and batches equal one-by-one runs."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from tap.config import LoadedConfig, parse_config
from tap.extract import write_batch as batching
from tap.extract.worker import CHUNKS_PER_EMBED
from tap.extract.write_batch import VectorCache, WriteBuffer
from tap.records import IngestEvent, Memory, Message, make_memory
from tap.runtime import priority
from tap.runtime.priority import HotPath
from tap.wiring.runtime import Runtime, open_runtime
from testkit.fakes import real_embedder_in_memory


class CountingStore:
    """A real store that counts write calls and can be told to fail them (a store going down)."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.writes = 0
        self.fail = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def add(self, memories: Sequence[Memory], vectors: Sequence[Sequence[float]]) -> None:
        self.writes += 1
        if self.fail:
            raise ConnectionError("store went away")
        self.store.add(memories, vectors)

    def update_metadata(self, memories: Sequence[Memory]) -> None:
        self.writes += 1
        self.store.update_metadata(memories)


def test_write_buffer_reads_its_own_writes_and_flushes_once(store: Any, embedder: Any) -> None:
    old = make_memory(scope="ana", content="Ana lives in Porto")
    other = make_memory(scope="bob", content="Bob lives in Porto")
    store.add([old, other], embedder.embed_documents([old.content, other.content]))
    counting = CountingStore(store)
    buffer = WriteBuffer(counting)
    new = make_memory(scope="ana", content="Ana lives in Lisbon now")
    buffer.add([new], embedder.embed_documents([new.content]))
    old.superseded_by = new.id
    buffer.update_metadata([old])
    query = embedder.embed_query("Where does Ana live?")
    hits = buffer.search_vectors([query], scope="ana", k=5)[0]
    assert [h.memory.id for h in hits] == [new.id]  # the superseded one is gone, the new one found
    assert [m.id for m in buffer.get([new.id, old.id, "nope"])] == [new.id, old.id]
    assert buffer.get([old.id])[0].superseded_by == new.id
    assert store.get([new.id]) == [] and counting.writes == 0
    assert buffer.flush() == 2 and counting.writes == 2
    assert [h.memory.id for h in store.search_vectors([query], scope="ana", k=5)[0]] == [new.id]
    assert store.get([old.id])[0].superseded_by == new.id


def test_vector_cache_embeds_each_text_once(embedder: Any) -> None:
    calls: list[list[str]] = []

    class Spy:
        model_id, dimensions = embedder.model_id, embedder.dimensions

        def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
            calls.append(list(texts))
            return embedder.embed_documents(texts)  # type: ignore[no-any-return]

        def embed_query(self, text: str) -> list[float]:
            return embedder.embed_query(text)  # type: ignore[no-any-return]

    cache = VectorCache(Spy(), size=2)
    first = cache.embed_documents(["a cat", "a dog", "a cat"])
    again = cache.embed_documents(["a dog"])
    assert calls == [["a cat", "a dog"]] and again[0] == first[1] and first[0] == first[2]
    cache.embed_documents(["a bird"])  # evicts "a cat" (least recently used)
    cache.embed_documents(["a cat"])
    assert calls[-1] == ["a cat"] and cache.hits == 2


def _conversation(rt: Runtime, conversation: str) -> None:
    facts = [
        "I moved to Lisbon last month and I love the tiles.",
        "My sister Lea is visiting on Friday.",
        "For the billing service, let's use Postgres.",
        "I prefer green tea in the morning.",
        "Actually I moved to Porto, not Lisbon.",
        "I decided to learn the cello this year.",
    ]
    messages = []
    for i, fact in enumerate(facts * 3):
        messages.append(Message(role="user", content=f"{fact} (note {i})", name="Ana", id=f"{conversation}:u{i}"))
        messages.append(Message(role="assistant", content=f"Noted {i}.", id=f"{conversation}:a{i}"))
    rt.ingestor.ingest(IngestEvent(scope="ana", conversation=conversation, source="proxy", messages=messages))


@pytest.fixture
def two_runtimes(tmp_path: Path) -> Iterator[tuple[Runtime, Runtime]]:
    config = parse_config("[extract]\nchunk_tokens = 120\noverlap_tokens = 30\n")
    one = open_runtime(
        LoadedConfig(config=config, path=None, data_dir=tmp_path / "one"), adapters=real_embedder_in_memory
    )
    two = open_runtime(
        LoadedConfig(config=config, path=None, data_dir=tmp_path / "two"), adapters=real_embedder_in_memory
    )
    yield one, two
    one.close()
    two.close()


@pytest.mark.parametrize("relaying", [False, True], ids=["idle", "while-requests-are-relayed"])
def test_a_batch_writes_what_one_chunk_at_a_time_writes(
    two_runtimes: tuple[Runtime, Runtime], monkeypatch: pytest.MonkeyPatch, relaying: bool
) -> None:
    hot_path = HotPath()  # this test's own: whatever other tests of the process left counted
    monkeypatch.setattr(priority, "HOT_PATH", hot_path)
    if relaying:  # the flush writes two records a call, as it does (32) while the proxy relays requests
        hot_path.enter()
        monkeypatch.setattr(batching, "WRITE_BATCH", 2)
    one_by_one, batched = two_runtimes
    for rt in two_runtimes:
        _conversation(rt, "c1")
        rt.queue.flush()
    ready = batched.queue.counts()["queued"]
    assert ready >= 4
    while one_by_one.worker.run_batch(1):
        pass
    counting = CountingStore(batched.worker.extraction.store)
    batched.worker.extraction.store = counting
    assert batched.worker.run_batch() == ready

    def snapshot(rt: Runtime) -> list[tuple[Any, ...]]:
        return sorted(
            (m.id, m.content, m.kind, m.supersedes, m.superseded_by, tuple(m.sources))
            for m in rt.store.iter_memories(scope="ana")
        )

    assert snapshot(batched) == snapshot(one_by_one) and len(snapshot(batched)) > ready
    assert batched.queue.counts()["done"] == ready
    written = len(snapshot(batched))
    assert counting.writes >= written // 2 if relaying else counting.writes <= 2  # one add, one update


def test_a_failed_flush_retries_the_whole_batch_and_doubles_nothing(two_runtimes: tuple[Runtime, Runtime]) -> None:
    rt, _ = two_runtimes
    _conversation(rt, "c1")
    rt.queue.flush()
    ready = rt.queue.counts()["queued"]
    counting = CountingStore(rt.worker.extraction.store)
    rt.worker.extraction.store = counting
    counting.fail = True
    assert rt.worker.run_batch() == ready
    assert rt.store.list_memories(scope="ana", limit=100) == []
    counts = rt.queue.counts()
    assert counts["done"] == 0 and counts["queued"] == ready and rt.worker.failures == ready
    counting.fail = False
    rt.queue._db.execute("UPDATE chunks SET next_at = 0")  # skip the backoff
    assert rt.worker.drain(flush=False) == ready
    memories = list(rt.store.iter_memories(scope="ana"))
    assert memories and len({m.id for m in memories}) == len(memories)
    assert rt.queue.counts()["done"] == ready


def test_a_batch_embeds_its_texts_ahead_chunk_by_chunk(two_runtimes: tuple[Runtime, Runtime]) -> None:
    rt, _ = two_runtimes
    _conversation(rt, "c1")
    rt.queue.flush()
    ready = rt.queue.counts()["queued"]
    calls: list[tuple[str, int]] = []
    real = rt.worker.extraction.embedder

    class Spy:
        model_id, dimensions = real.model_id, real.dimensions

        def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
            calls.append((threading.current_thread().name, len(texts)))
            return real.embed_documents(texts)

        def embed_query(self, text: str) -> list[float]:
            return real.embed_query(text)

    rt.worker.extraction.embedder = Spy()
    assert rt.worker.run_batch() == ready
    excerpts = [m for m in rt.store.iter_memories(scope="ana") if m.kind == "episode"]
    assert len({s for m in excerpts for s in m.sources}) >= ready  # every chunk's turns are in the verbatim layer
    # one background call per CHUNKS_PER_EMBED chunks (candidates and episodes); processing finds them
    # ready, and embeds only what reconcile rewrote ("Actually I moved to Porto, not Lisbon": the
    # corrected statement, one text per call)
    ahead = [n for name, n in calls if name.startswith("tap-embed-ahead")]
    assert len(ahead) == -(-ready // CHUNKS_PER_EMBED) and sum(ahead) > ready
    rewritten = [
        m
        for m in rt.store.list_memories(scope="ana", limit=1000, include_superseded=True, excerpts=False)
        if "Porto" in m.content
    ]
    assert all(n == 1 for name, n in calls if not name.startswith("tap-embed-ahead"))
    assert len(calls) - len(ahead) <= len(rewritten)


def test_failed_embedding_ahead_is_done_again_when_needed(embedder: Any) -> None:
    class FailsAhead:
        model_id, dimensions = embedder.model_id, embedder.dimensions

        def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
            if threading.current_thread().name.startswith("tap-embed-ahead"):
                raise RuntimeError("embedder hiccup")
            return embedder.embed_documents(texts)  # type: ignore[no-any-return]

        def embed_query(self, text: str) -> list[float]:
            return embedder.embed_query(text)  # type: ignore[no-any-return]

    cache = VectorCache(FailsAhead())
    cache.prefetch([["a cat"], ["a dog", "a cat"]])
    assert cache.embed_documents(["a dog", "a cat"]) == embedder.embed_documents(["a dog", "a cat"])
