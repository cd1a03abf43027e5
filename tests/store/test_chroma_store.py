"""ChromaStore against real Chroma: embedded PersistentClient and a real `chroma run` server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from store.chroma import ChromaStore
from store.lexical import LexicalIndex
from tap.errors import StoreError
from tap.records import Memory, make_memory


def _add(store: ChromaStore, embedder: Any, *texts: str, scope: str = "ann", **fields: Any) -> list[Memory]:
    memories = [make_memory(scope=scope, content=t, **fields) for t in texts]
    store.add(memories, embedder.embed_documents(texts))
    return memories


def test_round_trip_keeps_every_field(store: ChromaStore, embedder: Any) -> None:
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
    store.add([memory], embedder.embed_documents([memory.content]))
    assert store.get([memory.id]) == [memory]


def test_vector_search_is_scoped_and_ranked(store: ChromaStore, embedder: Any) -> None:
    lisbon, pizza = _add(store, embedder, "Ann lives in Lisbon, Portugal", "Ann likes pizza")
    _add(store, embedder, "Bob lives in Lisbon too", scope="bob")
    hits = store.vector_search(embedder.embed_query("Which city does Ann live in?"), scope="ann", k=5)
    assert [h.memory.id for h in hits] == [lisbon.id, pizza.id]
    assert hits[0].score > hits[1].score
    assert store.vector_search(embedder.embed_query("Lisbon"), scope="nobody", k=5) == []


def test_text_search_uses_bm25_and_scope(store: ChromaStore, embedder: Any) -> None:
    pg, _ = _add(store, embedder, "We chose Postgres for billing", "The weather was nice")
    _add(store, embedder, "Postgres everywhere", scope="other")
    hits = store.text_search("postgres database?", scope="ann", k=5)
    assert [h.memory.id for h in hits] == [pg.id]


def test_superseded_memories_leave_both_searches(store: ChromaStore, embedder: Any) -> None:
    (old,) = _add(store, embedder, "Ann lives in Porto")
    (new,) = _add(store, embedder, "Ann lives in Lisbon")
    old.superseded_by = new.id
    store.update_metadata([old])
    vector_ids = [h.memory.id for h in store.vector_search(embedder.embed_query("Porto"), scope="ann", k=5)]
    assert vector_ids == [new.id]
    assert store.text_search("Porto", scope="ann", k=5) == []
    assert store.get([old.id])[0].superseded_by == new.id


def test_list_delete_and_stats(store: ChromaStore, embedder: Any) -> None:
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


def test_listing_keeps_statements_and_excerpts_apart(store: ChromaStore, embedder: Any) -> None:
    fact = _add(store, embedder, "The user lives in Lisbon", kind="fact")[0]
    excerpt = _add(store, embedder, "User: I live in Lisbon now", kind="episode")[0]
    assert {m.id for m in store.list_memories(scope="ann", limit=10)} == {fact.id, excerpt.id}
    assert [m.id for m in store.list_memories(scope="ann", limit=10, excerpts=False)] == [fact.id]
    assert [m.id for m in store.list_memories(scope="ann", limit=10, excerpts=True)] == [excerpt.id]


def test_unknown_scope_is_empty_not_an_error(store: ChromaStore) -> None:
    assert store.list_memories(scope="nobody", limit=10) == []
    assert store.text_search("anything", scope="nobody", k=3) == []


def test_other_embedder_is_refused(store: ChromaStore, embedder: Any, isolated_home: Path) -> None:
    name = store._col.name
    url = store.url
    store.close()
    with pytest.raises(StoreError, match="Refusing to mix vectors"):
        ChromaStore(data_dir=isolated_home, url=url, collection=name, embedder_id="ollama:nomic", dimensions=768)
    reopened = ChromaStore(
        data_dir=isolated_home,
        url=url,
        collection=name,
        embedder_id=embedder.model_id,
        dimensions=embedder.dimensions,
    )
    reopened.close()


def test_lexical_index_is_rebuilt_when_out_of_step(store: ChromaStore, embedder: Any, isolated_home: Path) -> None:
    (memory,) = _add(store, embedder, "Kubernetes cluster upgrade planned")
    name, url = store._col.name, store.url
    store.close()
    index = LexicalIndex(isolated_home / f"lexical-{name}.db")
    index.clear()
    index.close()
    reopened = ChromaStore(
        data_dir=isolated_home,
        url=url,
        collection=name,
        embedder_id=embedder.model_id,
        dimensions=embedder.dimensions,
    )
    try:
        assert [h.memory.id for h in reopened.text_search("kubernetes", scope="ann", k=3)] == [memory.id]
    finally:
        reopened.close()


def test_embedded_store_locks_the_data_dir(isolated_home: Path, embedder: Any) -> None:
    first = ChromaStore(
        data_dir=isolated_home,
        url="",
        collection="locked",
        embedder_id=embedder.model_id,
        dimensions=embedder.dimensions,
    )
    try:
        with pytest.raises(StoreError, match="in use by another tap process"):
            ChromaStore(
                data_dir=isolated_home,
                url="",
                collection="locked",
                embedder_id=embedder.model_id,
                dimensions=embedder.dimensions,
            )
    finally:
        first.close()


def test_unreachable_server_is_a_store_error(isolated_home: Path, embedder: Any) -> None:
    from tests.chroma_server import free_port

    with pytest.raises(StoreError, match="connect failed"):
        ChromaStore(
            data_dir=isolated_home,
            url=f"http://127.0.0.1:{free_port()}",
            collection="x-y-z",
            embedder_id=embedder.model_id,
            dimensions=embedder.dimensions,
        )
