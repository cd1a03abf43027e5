"""The recall process's read view of the store (store.replica) on a real embedded store, in this
process: it follows the writer's commits, applying one twice changes nothing, and it writes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from store.chroma import ChromaStore
from store.lexical import Committed
from store.replica import ReplicaStore
from tap.records import make_memory


@pytest.fixture
def pair(isolated_home: Path, embedder: Any) -> Iterator[tuple[ChromaStore, ReplicaStore, list[Committed]]]:
    store = ChromaStore(
        data_dir=isolated_home, url="", collection="view", embedder_id=embedder.model_id, dimensions=embedder.dimensions
    )
    told: list[Committed] = []
    store.on_index_commit(told.append)
    view = store.read_view()
    assert view is not None
    replica = ReplicaStore(view[0], exact_scope_max=view[1], max_vectors=view[2], versions=store.get)
    yield store, replica, told
    replica.close()
    store.close()


def add(store: ChromaStore, embedder: Any, *texts: str) -> list[str]:
    memories = [make_memory(scope="bo", content=text) for text in texts]
    store.add(memories, embedder.embed_documents(list(texts)))
    return [m.id for m in memories]


def test_the_view_follows_writes_and_a_write_applied_twice_changes_nothing(
    pair: tuple[ChromaStore, ReplicaStore, list[Committed]], embedder: Any
) -> None:
    store, replica, told = pair
    [tea, _] = add(store, embedder, "Bo drinks green tea every morning", "Bo rides a red bicycle")
    for committed in told:
        replica.follow(committed)
    vector = embedder.embed_query("what does Bo drink?")
    assert [h.memory.id for h in replica.search_vectors([vector], scope="bo", k=1)[0]] == [tea]
    assert [h.memory.id for h in replica.search_text(["green tea"], scope="bo", k=5)[0]] == [tea]
    before = replica.revision("bo")
    store.delete([tea])
    for committed in told[-1:] * 2:  # the same write twice
        replica.follow(committed)
    assert replica.revision("bo") > before
    assert tea not in [h.memory.id for h in replica.search_vectors([vector], scope="bo", k=5)[0]]
    assert replica.search_text(["green tea"], scope="bo", k=5) == [[]]
    assert len(replica.get_active([tea])) == 0 and len(replica.search_vectors([vector], scope="bo", k=5)[0]) == 1
