"""The store's ports (tap.ports), one set of tests per port for every store that offers it.

Whole stores (`MemoryStore`: every port): the tests' InMemoryStore, ChromaStore on embedded
Chroma and (slow: it starts `chroma run`) on a Chroma server. The recall process's read view
(store.replica.ReplicaStore) offers `RecallStore` only: it is held to that port's tests, reading
what an embedded ChromaStore writes and following its commits as the recall process does.

The vectors come from the hashing embedder for all of them: the contract is the store's, not the
embedder's (tests/store/test_embedder_contract.py holds the embedders to theirs).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from tap.ports import MemoryStore, RecallStore
from tap.records import Memory, make_memory
from testkit.fakes import HashEmbedder, InMemoryStore

_collections = itertools.count()
WHOLE_STORES = ["memory", "embedded", pytest.param("server", marks=pytest.mark.slow)]


def _open(kind: str, request: pytest.FixtureRequest, home: Path, embedder: HashEmbedder) -> MemoryStore:
    if kind == "memory":
        return InMemoryStore(embedder_id=embedder.model_id)
    from store.chroma import ChromaStore

    return ChromaStore(
        data_dir=home,
        url=request.getfixturevalue("chroma_server").url if kind == "server" else "",
        collection=f"contract-{next(_collections)}-{os.getpid()}",
        embedder_id=embedder.model_id,
        dimensions=embedder.dimensions,
    )


@pytest.fixture(params=WHOLE_STORES)
def store(request: pytest.FixtureRequest, isolated_home: Path, hash_embedder: HashEmbedder) -> Iterator[MemoryStore]:
    """Each whole store, empty, for the hashing embedder."""
    opened = _open(request.param, request, isolated_home, hash_embedder)
    yield opened
    opened.close()


@pytest.fixture(params=[*WHOLE_STORES, "replica"])
def reader(
    request: pytest.FixtureRequest, isolated_home: Path, hash_embedder: HashEmbedder
) -> Iterator[tuple[MemoryStore, RecallStore]]:
    """(a whole store to write with, the RecallStore under test reading what it wrote): the same
    store for the whole stores; for the replica, an embedded ChromaStore and its read view."""
    if request.param != "replica":
        opened = _open(request.param, request, isolated_home, hash_embedder)
        yield opened, opened
        opened.close()
        return
    from store.chroma import ChromaStore
    from store.replica import ReplicaStore

    writer = _open("embedded", request, isolated_home, hash_embedder)
    assert isinstance(writer, ChromaStore)
    view = writer.read_view()
    assert view is not None
    replica = ReplicaStore(view[0], exact_scope_max=view[1], max_vectors=view[2], versions=writer.get)
    writer.on_index_commit(replica.follow)
    yield writer, replica
    replica.close()
    writer.close()


@pytest.fixture
def embedder(hash_embedder: HashEmbedder) -> HashEmbedder:
    return hash_embedder


def _add(store: MemoryStore, embedder: Any, *texts: str, scope: str = "ann", **fields: Any) -> list[Memory]:
    memories = [make_memory(scope=scope, content=t, **fields) for t in texts]
    store.add(memories, embedder.embed_documents(texts))
    return memories


def _ids(hits: list[Any]) -> list[str]:
    return [h.memory.id for h in hits]


# -- MemoryReader and RecallStore: every store, and the recall process's read view ----------------


def test_vector_search_is_scoped_and_ranked(reader: tuple[MemoryStore, RecallStore], embedder: Any) -> None:
    store, view = reader
    lisbon, pizza = _add(store, embedder, "Ann lives in Lisbon, Portugal", "Ann likes pizza")
    _add(store, embedder, "Bob lives in Lisbon too", scope="bob")
    [hits] = view.search_vectors([embedder.embed_query("Which city does Ann live in?")], scope="ann", k=5)
    assert _ids(hits) == [lisbon.id, pizza.id]
    assert hits[0].score > hits[1].score
    assert view.search_vectors([embedder.embed_query("Lisbon")], scope="nobody", k=5) == [[]]


def test_text_search_uses_bm25_and_scope(reader: tuple[MemoryStore, RecallStore], embedder: Any) -> None:
    store, view = reader
    pg, _ = _add(store, embedder, "We chose Postgres for billing", "The weather was nice")
    _add(store, embedder, "Postgres everywhere", scope="other")
    assert _ids(view.search_text(["postgres database?"], scope="ann", k=5)[0]) == [pg.id]
    assert view.search_text(["anything"], scope="nobody", k=3) == [[]]


def test_superseded_memories_leave_both_searches(reader: tuple[MemoryStore, RecallStore], embedder: Any) -> None:
    store, view = reader
    (old,) = _add(store, embedder, "Ann lives in Porto")
    (new,) = _add(store, embedder, "Ann lives in Lisbon")
    old.superseded_by = new.id
    store.update_metadata([old])
    assert _ids(view.search_vectors([embedder.embed_query("Porto")], scope="ann", k=5)[0]) == [new.id]
    assert view.search_text(["Porto"], scope="ann", k=5) == [[]]
    assert view.get([old.id])[0].superseded_by == new.id
    assert [m.id for m in view.get_active([old.id, new.id, "m_missing", new.id])] == [new.id, new.id]


def test_prefix_search_finds_the_words_a_query_word_starts(
    reader: tuple[MemoryStore, RecallStore], embedder: Any
) -> None:
    store, view = reader
    (vimrc,) = _add(store, embedder, "Ann keeps her vimrc in a dotfiles repo")
    assert view.search_text(["vim"], scope="ann", k=5) == [[]]
    assert _ids(view.search_text(["vim"], scope="ann", k=5, prefix=True)[0]) == [vimrc.id]


def test_several_vectors_search_like_one_each(reader: tuple[MemoryStore, RecallStore], embedder: Any) -> None:
    store, view = reader
    _add(store, embedder, "Ann lives in Lisbon", "Ann likes pizza", "Ann drives a red car")
    queries = [embedder.embed_query(q) for q in ("Lisbon", "pizza", "car")]
    many = view.search_vectors(queries, scope="ann", k=2)
    assert [_ids(hits) for hits in many] == [_ids(view.search_vectors([q], scope="ann", k=2)[0]) for q in queries]
    assert view.search_vectors([], scope="ann", k=2) == []


def test_several_queries_search_like_one_each(reader: tuple[MemoryStore, RecallStore], embedder: Any) -> None:
    store, view = reader
    _add(store, embedder, "Ann keeps bees in Sintra", "Ann drinks green tea", "Ann sails on weekends")
    queries = ["bees", "green tea", "sailing", "nothing matches this"]
    many = view.search_text(queries, scope="ann", k=2)
    assert [_ids(hits) for hits in many] == [_ids(view.search_text([q], scope="ann", k=2)[0]) for q in queries]
    assert many[0] and many[-1] == []
    assert view.search_text([], scope="ann", k=2) == []


def test_the_revision_changes_with_every_write_to_its_scope(
    reader: tuple[MemoryStore, RecallStore], embedder: Any
) -> None:
    store, view = reader
    before, other = view.revision("ann"), view.revision("bob")
    (memory,) = _add(store, embedder, "Ann keeps bees")
    added = view.revision("ann")
    memory.importance = 5
    store.update_metadata([memory])
    updated = view.revision("ann")
    store.delete([memory.id])
    assert before != added != updated != view.revision("ann")
    assert view.revision("bob") == other


# -- MemoryWriter --------------------------------------------------------------------------------


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


def test_the_store_keeps_values_not_the_callers_objects(store: MemoryStore, embedder: Any) -> None:
    (memory,) = _add(store, embedder, "Ann lives in Lisbon")
    memory.superseded_by = "m_elsewhere"  # changed by the caller, not written back
    (got,) = store.get([memory.id])
    assert got.active
    got.tags = ("changed",)
    assert store.get([memory.id])[0].tags == ()
    assert _ids(store.search_vectors([embedder.embed_query("Lisbon")], scope="ann", k=3)[0]) == [memory.id]


def test_an_update_rewrites_the_record_and_keeps_the_vector(store: MemoryStore, embedder: Any) -> None:
    (memory,) = _add(store, embedder, "Ann likes tea")
    vector = store.get_vectors([memory.id])[memory.id]
    memory.importance, memory.tags = 5, ("drinks",)
    store.update_metadata([memory])
    [stored] = store.get([memory.id])
    # Chroma keeps a float's value to about the last bit: timestamps are compared to the microsecond
    floats = ("created_at", "updated_at", "valid_from", "last_accessed", "archived_at")
    for name in floats:
        assert getattr(stored, name) == pytest.approx(getattr(memory, name), abs=1e-6), name
    assert msgspec.structs.replace(stored, **{n: 0.0 for n in floats}) == msgspec.structs.replace(
        memory, **{n: 0.0 for n in floats}
    )
    assert store.get_vectors([memory.id])[memory.id] == pytest.approx(vector)


# -- SlotLookup ----------------------------------------------------------------------------------


def test_active_ids_are_the_scopes_current_unarchived_memories(store: MemoryStore, embedder: Any) -> None:
    (old,) = _add(store, embedder, "Ann lives in Porto")
    (new,) = _add(store, embedder, "Ann lives in Lisbon")
    old.superseded_by = new.id
    (archived,) = _add(store, embedder, "Ann kept a diary in 2019")
    archived.archived_at = archived.created_at + 1
    store.update_metadata([old, archived])
    _add(store, embedder, "Bo lives in Oslo", scope="bo")
    assert sorted(store.active_ids("ann")) == [new.id]
    listed = store.list_memories(scope="ann", limit=10, archived=False)
    assert sorted(store.active_ids("ann")) == sorted(m.id for m in listed)
    assert store.active_ids("nobody") == []


def test_slot_mates_are_the_active_memories_of_the_slot(store: MemoryStore, embedder: Any) -> None:
    home, old_home, pet = _add(store, embedder, "Ann lives in Lisbon", "Ann lived in Porto", "Ann has a cat")
    home.slot = old_home.slot = "user|residence"
    old_home.superseded_by = home.id
    store.update_metadata([home, old_home, pet])
    (elsewhere,) = _add(store, embedder, "Bob lives in Lisbon", scope="bob")
    elsewhere.slot = "user|residence"
    store.update_metadata([elsewhere])
    assert [m.id for m in store.active_in_slot(scope="ann", slot="user|residence")] == [home.id]
    assert store.active_in_slot(scope="ann", slot="") == []
    assert store.active_in_slot(scope="ann", slot="user|employer") == []


# -- MemoryCatalog -------------------------------------------------------------------------------


def test_listing_pages_newest_first(store: MemoryStore, embedder: Any) -> None:
    a = _add(store, embedder, "first", kind="fact")[0]
    b = _add(store, embedder, "second", kind="decision")[0]
    b.created_at = a.created_at + 10
    store.update_metadata([b])
    assert [m.id for m in store.list_memories(scope="ann", limit=10)] == [b.id, a.id]
    assert [m.id for m in store.list_memories(scope="ann", limit=1, offset=1)] == [a.id]
    assert store.list_memories(scope="nobody", limit=10) == []


def test_listing_keeps_statements_and_excerpts_apart(store: MemoryStore, embedder: Any) -> None:
    fact = _add(store, embedder, "The user lives in Lisbon", kind="fact")[0]
    excerpt = _add(store, embedder, "User: I live in Lisbon now", kind="episode")[0]
    assert {m.id for m in store.list_memories(scope="ann", limit=10)} == {fact.id, excerpt.id}
    assert [m.id for m in store.list_memories(scope="ann", limit=10, excerpts=False)] == [fact.id]
    assert [m.id for m in store.list_memories(scope="ann", limit=10, excerpts=True)] == [excerpt.id]


def test_conflicts_archived_filters_and_inactive_search(store: MemoryStore, embedder: Any) -> None:
    home, pet = _add(store, embedder, "Ann lives in Lisbon", "Ann has a cat named Tom")
    pet.conflicts_with = (home.id,)
    store.update_metadata([pet])
    (old,) = _add(store, embedder, "Ann plays chess", now=1.0)
    old.archived_at = 5.0
    store.update_metadata([old])
    (other,) = _add(store, embedder, "Bob has a dog", scope="bob")
    assert [m.id for m in store.in_conflict(scope="ann")] == [pet.id]
    assert [m.id for m in store.in_conflict(scope=None)] == [pet.id] and store.in_conflict(scope="bob") == []
    assert [m.id for m in store.list_memories(scope="ann", limit=10, archived=True)] == [old.id]
    assert {m.id for m in store.list_memories(scope="ann", limit=10, archived=False)} == {home.id, pet.id}
    assert store.count_memories(scope="ann") == 3 and store.count_memories(scope="ann", archived=False) == 2
    assert store.count_memories(scope=None) == 4
    assert store.scope_counts() == {"ann": (2, 0), "bob": (1, 0)}
    assert old.id not in _ids(store.search_vectors([embedder.embed_query("chess")], scope="ann", k=5)[0])
    assert old.id not in _ids(store.search_text(["chess"], scope="ann", k=5)[0])
    assert _ids(store.inactive_search(embedder.embed_query("chess"), scope="ann", k=5)) == [old.id]
    assert other.id in {m.id for m in store.iter_memories()}


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


# -- StoreAdmin ----------------------------------------------------------------------------------


def test_delete_and_stats(store: MemoryStore, embedder: Any) -> None:
    a = _add(store, embedder, "first", kind="fact")[0]
    _add(store, embedder, "second", kind="decision")
    (old,) = _add(store, embedder, "third", kind="fact")
    old.archived_at = 5.0
    store.update_metadata([old])
    stats = store.stats()
    assert (stats.active, stats.by_kind, stats.by_scope) == (2, {"decision": 1, "fact": 1}, {"ann": 2})
    assert (stats.total, stats.archived, stats.embedder) == (3, 1, embedder.model_id)
    assert store.delete([a.id, "missing"]) == 1
    assert store.get([a.id]) == []
    assert store.search_text(["first"], scope="ann", k=5) == [[]]
    assert isinstance(store.status(), dict) and store.where


def test_vectors_come_back_as_stored_and_deleted_ones_are_gone(store: MemoryStore, embedder: Any) -> None:
    a, b = _add(store, embedder, "Ann likes tea", "Ann likes coffee")
    vectors = store.get_vectors([a.id, b.id, "missing"])
    assert set(vectors) == {a.id, b.id}
    assert vectors[a.id] == pytest.approx(embedder.embed_documents([a.content])[0], abs=1e-5)
    assert store.delete([a.id, a.id, "missing"]) == 1
    assert store.get_vectors([a.id]) == {} and [m.id for m in store.get([a.id, b.id])] == [b.id]
    assert _ids(store.search_vectors([embedder.embed_query("tea")], scope="ann", k=5)[0]) == [b.id]
