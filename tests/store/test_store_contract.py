"""The MemoryStore contract (tap.ports), one set of tests for every store: the tests' InMemoryStore
and ChromaStore on embedded Chroma and (slow: it starts `chroma run`) on a Chroma server.

The vectors come from the hashing embedder for all of them: the contract is the store's, not the
embedder's (tests/store/test_embedder_contract.py holds the embedders to theirs).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tap.ports import MemoryStore
from tap.records import Memory, make_memory
from tests.fakes import HashEmbedder, InMemoryStore

_collections = itertools.count()


@pytest.fixture(params=["memory", "embedded", pytest.param("server", marks=pytest.mark.slow)])
def store(request: pytest.FixtureRequest, isolated_home: Path, hash_embedder: HashEmbedder) -> Iterator[MemoryStore]:
    """Each store the contract holds, empty, for the hashing embedder."""
    if request.param == "memory":
        yield InMemoryStore(embedder_id=hash_embedder.model_id)
        return
    from store.chroma import ChromaStore

    url = request.getfixturevalue("chroma_server").url if request.param == "server" else ""
    opened = ChromaStore(
        data_dir=isolated_home,
        url=url,
        collection=f"contract-{next(_collections)}-{os.getpid()}",
        embedder_id=hash_embedder.model_id,
        dimensions=hash_embedder.dimensions,
    )
    yield opened
    opened.close()


@pytest.fixture
def embedder(hash_embedder: HashEmbedder) -> HashEmbedder:
    return hash_embedder


def _add(store: MemoryStore, embedder: Any, *texts: str, scope: str = "ann", **fields: Any) -> list[Memory]:
    memories = [make_memory(scope=scope, content=t, **fields) for t in texts]
    store.add(memories, embedder.embed_documents(texts))
    return memories


def test_round_trip_keeps_every_field(store: MemoryStore, embedder: Any) -> None:
    memory = make_memory(
        scope="ann",
        content="Ann moved to Lisbon",
        kind="event",
        importance=5,
        tags=["move", "city"],
        source="proxy",
        conversation="c1",
        sources=["t1", "t2"],
        valid_from=1_700_000_000.0,
        now=1_700_000_123.25,  # Chroma may drop the last bit of arbitrary floats (e.g. time.time())
    )
    memory.embedder = embedder.model_id
    memory.conflicts_with, memory.merged_from = ("m_a",), ("m_b", "m_c")
    store.add([memory], embedder.embed_documents([memory.content]))
    assert store.get([memory.id]) == [memory]


def test_vector_search_is_scoped_and_ranked(store: MemoryStore, embedder: Any) -> None:
    lisbon, pizza = _add(store, embedder, "Ann lives in Lisbon, Portugal", "Ann likes pizza")
    _add(store, embedder, "Bob lives in Lisbon too", scope="bob")
    hits = store.vector_search(embedder.embed_query("Which city does Ann live in?"), scope="ann", k=5)
    assert [h.memory.id for h in hits] == [lisbon.id, pizza.id]
    assert hits[0].score > hits[1].score
    assert store.vector_search(embedder.embed_query("Lisbon"), scope="nobody", k=5) == []


def test_text_search_uses_bm25_and_scope(store: MemoryStore, embedder: Any) -> None:
    pg, _ = _add(store, embedder, "We chose Postgres for billing", "The weather was nice")
    _add(store, embedder, "Postgres everywhere", scope="other")
    hits = store.text_search("postgres database?", scope="ann", k=5)
    assert [h.memory.id for h in hits] == [pg.id]


def test_superseded_memories_leave_both_searches(store: MemoryStore, embedder: Any) -> None:
    (old,) = _add(store, embedder, "Ann lives in Porto")
    (new,) = _add(store, embedder, "Ann lives in Lisbon")
    old.superseded_by = new.id
    store.update_metadata([old])
    vector_ids = [h.memory.id for h in store.vector_search(embedder.embed_query("Porto"), scope="ann", k=5)]
    assert vector_ids == [new.id]
    assert store.text_search("Porto", scope="ann", k=5) == []
    assert store.get([old.id])[0].superseded_by == new.id
    assert [m.id for m in store.get_active([old.id, new.id, "m_missing", new.id])] == [new.id, new.id]
    (archived,) = _add(store, embedder, "Ann kept a diary in 2019")
    archived.archived_at = archived.created_at + 1
    store.update_metadata([archived])
    _add(store, embedder, "Bo lives in Oslo", scope="bo")
    assert sorted(store.active_ids("ann")) == [new.id]  # current, not archived, this scope only
    listed = store.list_memories(scope="ann", limit=10, archived=False)
    assert sorted(store.active_ids("ann")) == sorted(m.id for m in listed)


def test_list_delete_and_stats(store: MemoryStore, embedder: Any) -> None:
    a = _add(store, embedder, "first", kind="fact")[0]
    b = _add(store, embedder, "second", kind="decision")[0]
    b.created_at = a.created_at + 10
    store.update_metadata([b])
    assert [m.id for m in store.list_memories(scope="ann", limit=10)] == [b.id, a.id]
    assert [m.id for m in store.list_memories(scope="ann", limit=1, offset=1)] == [a.id]
    stats = store.stats()
    assert (stats.active, stats.by_kind, stats.by_scope) == (2, {"decision": 1, "fact": 1}, {"ann": 2})
    assert store.delete([a.id, "missing"]) == 1
    assert store.get([a.id]) == []
    assert store.text_search("first", scope="ann", k=5) == []


def test_listing_keeps_statements_and_excerpts_apart(store: MemoryStore, embedder: Any) -> None:
    fact = _add(store, embedder, "The user lives in Lisbon", kind="fact")[0]
    excerpt = _add(store, embedder, "User: I live in Lisbon now", kind="episode")[0]
    assert {m.id for m in store.list_memories(scope="ann", limit=10)} == {fact.id, excerpt.id}
    assert [m.id for m in store.list_memories(scope="ann", limit=10, excerpts=False)] == [fact.id]
    assert [m.id for m in store.list_memories(scope="ann", limit=10, excerpts=True)] == [excerpt.id]


def test_unknown_scope_is_empty_not_an_error(store: MemoryStore) -> None:
    assert store.list_memories(scope="nobody", limit=10) == []
    assert store.text_search("anything", scope="nobody", k=3) == []


def test_slots_conflicts_and_archived_filters(store: MemoryStore, embedder: Any) -> None:
    home, pet = _add(store, embedder, "Ann lives in Lisbon", "Ann has a cat named Tom")
    home.slot, pet.conflicts_with = "user|residence", [home.id]
    store.update_metadata([home, pet])
    (old,) = _add(store, embedder, "Ann plays chess", now=1.0)
    old.archived_at = 5.0
    store.update_metadata([old])
    (other,) = _add(store, embedder, "Bob has a dog", scope="bob")
    assert [m.id for m in store.active_in_slot(scope="ann", slot="user|residence")] == [home.id]
    assert store.active_in_slot(scope="ann", slot="") == []
    assert [m.id for m in store.in_conflict(scope="ann")] == [pet.id]
    assert [m.id for m in store.in_conflict(scope=None)] == [pet.id] and store.in_conflict(scope="bob") == []
    assert [m.id for m in store.list_memories(scope="ann", limit=10, archived=True)] == [old.id]
    assert {m.id for m in store.list_memories(scope="ann", limit=10, archived=False)} == {home.id, pet.id}
    assert store.count_memories(scope="ann") == 3 and store.count_memories(scope="ann", archived=False) == 2
    assert store.count_memories(scope=None) == 4
    assert store.scope_counts() == {"ann": (2, 0), "bob": (1, 0)}
    assert old.id not in {h.memory.id for h in store.vector_search(embedder.embed_query("chess"), scope="ann", k=5)}
    assert old.id not in {h.memory.id for h in store.text_search("chess", scope="ann", k=5)}
    assert [h.memory.id for h in store.inactive_search(embedder.embed_query("chess"), scope="ann", k=5)] == [old.id]
    assert store.stats().archived == 1 and other.id in {m.id for m in store.iter_memories()}


def test_versions_are_listed_and_exported_in_order(store: MemoryStore, embedder: Any) -> None:
    (old,) = _add(store, embedder, "Ann works at Acme", now=100.0)
    (new,) = _add(store, embedder, "Ann works at Stripe", now=200.0)
    old.superseded_by = new.id
    store.update_metadata([old])
    assert [m.id for m in store.list_memories(scope="ann", limit=10)] == [new.id]
    assert [m.id for m in store.list_memories(scope="ann", limit=10, include_superseded=True)] == [new.id, old.id]
    assert store.count_memories(scope="ann", include_superseded=True) == 2
    assert [m.id for m in store.iter_memories(scope="ann")] == [old.id, new.id]
    assert list(store.iter_memories(scope="nobody")) == []


def test_vectors_come_back_as_stored_and_deleted_ones_are_gone(store: MemoryStore, embedder: Any) -> None:
    a, b = _add(store, embedder, "Ann likes tea", "Ann likes coffee")
    vectors = store.get_vectors([a.id, b.id, "missing"])
    assert set(vectors) == {a.id, b.id}
    assert vectors[a.id] == pytest.approx(embedder.embed_documents([a.content])[0], abs=1e-5)
    assert store.delete([a.id, a.id, "missing"]) == 1
    store.purge()
    assert store.get_vectors([a.id]) == {} and [m.id for m in store.get([a.id, b.id])] == [b.id]
    assert [h.memory.id for h in store.vector_search(embedder.embed_query("tea"), scope="ann", k=5)] == [b.id]


def test_prefix_search_finds_the_words_a_query_word_starts(store: MemoryStore, embedder: Any) -> None:
    (vimrc,) = _add(store, embedder, "Ann keeps her vimrc in a dotfiles repo")
    assert store.text_search("vim", scope="ann", k=5) == []
    assert [h.memory.id for h in store.text_search("vim", scope="ann", k=5, prefix=True)] == [vimrc.id]


def test_many_vectors_search_like_one_each(store: MemoryStore, embedder: Any) -> None:
    _add(store, embedder, "Ann lives in Lisbon", "Ann likes pizza", "Ann drives a red car")
    queries = [embedder.embed_query(q) for q in ("Lisbon", "pizza", "car")]
    many = store.vector_search_many(queries, scope="ann", k=2)
    assert [[h.memory.id for h in hits] for hits in many] == [
        [h.memory.id for h in store.vector_search(q, scope="ann", k=2)] for q in queries
    ]
    assert store.vector_search_many([], scope="ann", k=2) == []


def test_the_store_keeps_values_not_the_callers_objects(store: MemoryStore, embedder: Any) -> None:
    (memory,) = _add(store, embedder, "Ann lives in Lisbon")
    memory.superseded_by = "m_elsewhere"  # changed by the caller, not written back
    (got,) = store.get([memory.id])
    assert got.active
    got.tags = ("changed",)
    assert store.get([memory.id])[0].tags == ()
    assert [h.memory.id for h in store.vector_search(embedder.embed_query("Lisbon"), scope="ann", k=3)] == [memory.id]


def test_many_queries_search_like_one_each(store: MemoryStore, embedder: Any) -> None:
    _add(store, embedder, "Ann keeps bees in Sintra", "Ann drinks green tea", "Ann sails on weekends")
    queries = ["bees", "green tea", "sailing", "nothing matches this"]
    many = store.text_search_many(queries, scope="ann", k=2)
    assert [[h.memory.id for h in hits] for hits in many] == [
        [h.memory.id for h in store.text_search(q, scope="ann", k=2)] for q in queries
    ]
    assert many[0] and many[-1] == []


def test_the_revision_changes_with_every_write_to_its_scope(store: MemoryStore, embedder: Any) -> None:
    before, other = store.revision("ann"), store.revision("bob")
    (memory,) = _add(store, embedder, "Ann keeps bees")
    added = store.revision("ann")
    memory.importance = 5
    store.update_metadata([memory])
    updated = store.revision("ann")
    store.delete([memory.id])
    assert before != added != updated != store.revision("ann")
    assert store.revision("bob") == other
    assert isinstance(store.status(), dict) and store.warm_vectors() >= 0
