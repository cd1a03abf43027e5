"""Small scopes searched exactly in memory: kept in step with writes, bounded, never stale."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np

from store.chroma import ChromaStore
from store.scope_vectors import ScopeVectors
from tap.records import make_memory
from testkit.waits import wait_until


def unit(rng: np.random.Generator, n: int, dims: int = 16) -> np.ndarray:
    rows = rng.normal(size=(n, dims)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _embedded_store(home: Path, embedder: Any, collection: str) -> ChromaStore:
    """An embedded store for the embedder's vectors."""
    return ChromaStore(
        data_dir=home, url="", collection=collection, embedder_id=embedder.model_id, dimensions=embedder.dimensions
    )


def test_search_stays_exact_through_random_writes() -> None:
    rng, pick = np.random.default_rng(1), random.Random(1)
    cache = ScopeVectors(max_scope=1000)
    reference: dict[str, np.ndarray] = {f"m{i}": v for i, v in enumerate(unit(rng, 50))}
    assert cache.load("ana", list(reference), list(reference.values()), version=cache.version)
    for step in range(400):
        if pick.random() < 0.5 or not reference:
            memory_id = f"m{pick.randrange(120)}"
            vector = unit(rng, 1)[0]
            cache.put("ana", memory_id, vector)
            reference[memory_id] = vector
        else:
            memory_id = pick.choice(sorted(reference))
            cache.remove(memory_id)
            del reference[memory_id]
        if step % 20 == 0:
            query = unit(rng, 1)[0]
            got = cache.search("ana", [query], 7)
            assert got is not None
            want = sorted(reference, key=lambda i: -float(reference[i] @ query))[:7]
            assert [i for i, _ in got[0]] == want
            assert [s for _, s in got[0]] == sorted((s for _, s in got[0]), reverse=True)


def test_a_scope_growing_by_writes_keeps_little_spare_room() -> None:
    # a backfill builds its scopes one write at a time: doubling the rows held up to twice the
    # vectors (20 of 79 MB at the end of `./dev bench ingest`)
    rng = np.random.default_rng(3)
    cache = ScopeVectors(max_scope=5000)
    assert cache.load("ana", [], np.zeros((0, 0), np.float32), version=cache.version)
    vectors = unit(rng, 1100)
    for i, vector in enumerate(vectors):
        cache.put("ana", f"m{i}", vector)
    held = cache._scopes["ana"].matrix
    assert 1100 <= len(held) <= 1100 + 1100 // 8 + 16
    got = cache.search("ana", [vectors[7]], 1)
    assert got is not None and got[0][0][0] == "m7"


def test_a_load_that_raced_a_write_is_refused() -> None:
    cache = ScopeVectors()
    before = cache.version
    cache.put("bob", "m1", [1.0, 0.0])  # a write lands while the store is being read
    assert not cache.load("ana", ["m2"], [[0.0, 1.0]], version=before)
    assert cache.search("ana", [[0.0, 1.0]], 1) is None
    assert cache.load("ana", ["m2"], [[0.0, 1.0]], version=cache.version)


def test_bounds_per_scope_and_in_total() -> None:
    rng = np.random.default_rng(2)
    cache = ScopeVectors(max_scope=10, max_total=15)
    assert not cache.load("big", [f"b{i}" for i in range(11)], unit(rng, 11), version=cache.version)
    assert cache.load("one", [f"a{i}" for i in range(8)], unit(rng, 8), version=cache.version)
    assert cache.load("two", [f"c{i}" for i in range(8)], unit(rng, 8), version=cache.version)
    assert not cache.cached("one") and cache.cached("two")  # 16 > 15: the least recently used went
    for i in range(3):
        cache.put("two", f"new{i}", unit(rng, 1)[0])
    assert not cache.cached("two")  # grew past max_scope: dropped, searched in the store again


def test_store_serves_small_scopes_from_memory_and_follows_its_writes(isolated_home: Path, embedder: Any) -> None:
    store = _embedded_store(isolated_home, embedder, "small")
    try:
        big = [make_memory(scope="big", content=f"filler note number {i}") for i in range(60)]
        store.add(big, embedder.embed_documents([m.content for m in big]))
        facts = ["Ana lives in Lisbon", "Ana plays the cello", "Ana is allergic to cats"]
        small = [make_memory(scope="ana", content=c) for c in facts]
        store.add(small, embedder.embed_documents(facts))
        query = embedder.embed_query("Where does Ana live?")
        assert store.search_vectors([query], scope="ana", k=1)[0][0].memory.id == small[0].id
        assert store._small.cached("ana")  # the small scope is now searched in memory
        small[1].access_count += 1
        store.update_metadata([small[1]])  # an access count: the vectors held are still right
        assert store._small.cached("ana")

        moved = make_memory(scope="ana", content="Ana lives in Porto now")
        store.add([moved], embedder.embed_documents([moved.content]))
        small[0].superseded_by = moved.id
        store.update_metadata([small[0]])
        hits = store.search_vectors([query], scope="ana", k=5)[0]
        assert [h.memory.id for h in hits][0] == moved.id and small[0].id not in {h.memory.id for h in hits}

        store.delete([moved.id])
        ids = {h.memory.id for h in store.search_vectors([query], scope="ana", k=5)[0]}
        assert ids == {small[1].id, small[2].id}
    finally:
        store.close()


def test_equal_vectors_are_cut_and_ordered_by_id_whatever_order_they_were_loaded_in() -> None:
    rng = np.random.default_rng(3)
    shared, others = unit(rng, 1)[0], unit(rng, 20)
    ids = [f"p{i}" for i in range(6)] + [f"o{i}" for i in range(20)]
    vectors = [shared] * 6 + list(others)
    results = []
    for order in (list(range(26)), list(reversed(range(26))), [5, 0, 3, 1, 4, 2, *range(6, 26)]):
        cache = ScopeVectors()
        assert cache.load("ana", [ids[i] for i in order], [vectors[i] for i in order], version=cache.version)
        got = cache.search("ana", [shared], 3)
        assert got is not None
        results.append([memory_id for memory_id, _ in got[0]])
    assert results == [["p0", "p1", "p2"]] * 3  # the passages of one turn share a vector: ties go by id


def test_a_text_search_loads_the_scopes_vectors_ahead_once_and_the_vector_search_finds_them(
    isolated_home: Path, embedder: Any
) -> None:
    store = _embedded_store(isolated_home, embedder, "prepared")
    loads: list[str] = []
    real_load = store._load_scope

    def counted_load(scope: str) -> bool:
        loads.append(scope)
        return real_load(scope)

    store._load_scope = counted_load  # type: ignore[method-assign]
    try:
        only = [make_memory(scope="big", content=f"filler note number {i}") for i in range(30)]
        store.add(only, embedder.embed_documents([m.content for m in only]))
        store.search_text(["filler"], scope="big", k=3)
        wait_until(lambda: store._small.cached("big"))  # the whole collection: kept in memory too
        assert loads == ["big"]

        facts = ["Ana lives in Lisbon", "Ana plays the cello"]
        small = [make_memory(scope="ana", content=c) for c in facts]
        store.add(small, embedder.embed_documents(facts))
        store.search_text(["Lisbon"], scope="ana", k=3)
        wait_until(lambda: store._small.cached("ana"))
        store.search_text(["cello"], scope="ana", k=3)
        [hits] = store.search_vectors([embedder.embed_query("Where does Ana live?")], scope="ana", k=1)
        assert [h.memory.id for h in hits] == [small[0].id]
        assert loads == ["big", "ana"]  # neither the second text search nor the vector search loaded it again
        store.search_text(["anything"], scope="nobody", k=3)  # an empty scope: nothing to load, no error
        store._preloader.close()  # waits for what it was asked to do
        assert loads == ["big", "ana"]
    finally:
        store.close()
