"""Several processes on one Chroma server: each one's writes reach the others' lexical indexes.

Two ChromaStores with their own data dirs (so their own lexical indexes, as two machines would
have) on one real `chroma run` server. What one writes, updates, supersedes or forgets must be
found, or no longer found, by the other's vector *and* lexical search (the tests wait for it; how
soon is the follow interval's business, FOLLOW_S in store/chroma.py, not a test's).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from store.chroma import ChromaStore
from tap.records import make_memory
from testkit.waits import wait_until

pytestmark = pytest.mark.slow  # starts a `chroma run` server (see pyproject.toml: markers)

_names = itertools.count()


@pytest.fixture
def pair(tmp_path: Path, embedder: Any, chroma_server: Any) -> Iterator[tuple[ChromaStore, ChromaStore]]:
    collection = f"shared-{next(_names)}-{os.getpid()}"
    stores = [
        ChromaStore(
            data_dir=tmp_path / name,
            url=chroma_server.url,
            collection=collection,
            embedder_id=embedder.model_id,
            dimensions=embedder.dimensions,
        )
        for name in ("a", "b")
    ]
    yield stores[0], stores[1]
    for store in stores:
        store.close()


def eventually(check: Callable[[], bool]) -> None:
    """Wait until the other process's index has followed (each follows the feed every second)."""
    wait_until(check, what="the other store to follow the change feed")


def lexical_ids(store: ChromaStore, query: str) -> list[str]:
    return [h.memory.id for h in store.search_text([query], scope="ann", k=5)[0]]


def vector_ids(store: ChromaStore, embedder: Any, query: str) -> list[str]:
    return [h.memory.id for h in store.search_vectors([embedder.embed_query(query)], scope="ann", k=5)[0]]


def test_writes_through_one_store_reach_the_other(pair: tuple[ChromaStore, ChromaStore], embedder: Any) -> None:
    a, b = pair
    old = make_memory(scope="ann", content="Ann keeps bees in Zwolle")
    a.add([old], embedder.embed_documents([old.content]))
    eventually(lambda: lexical_ids(b, "zwolle") == [old.id])
    assert vector_ids(b, embedder, "Ann's beekeeping hobby") == [old.id]

    # supersede: a new version is added and the old one retired, as an edit or reconcile does
    new = msgspec.structs.replace(make_memory(scope="ann", content="Ann moved her hives to Utrecht"), supersedes=old.id)
    retired = msgspec.structs.replace(old, superseded_by=new.id)
    a.add([new], embedder.embed_documents([new.content]))
    a.update_metadata([retired])
    eventually(lambda: lexical_ids(b, "utrecht hives") == [new.id] and lexical_ids(b, "zwolle") == [])
    assert vector_ids(b, embedder, "Ann's beehives") == [new.id]
    assert b.revision("ann") != 0

    # forget
    a.delete([new.id, old.id])
    eventually(lambda: lexical_ids(b, "utrecht hives") == [] and vector_ids(b, embedder, "Ann's beehives") == [])


def test_writes_meet_in_both_directions_with_equal_counts(pair: tuple[ChromaStore, ChromaStore], embedder: Any) -> None:
    """The case counting could not see: one process supersedes, the other adds (equal counts)."""
    a, b = pair
    first = make_memory(scope="ann", content="Ann drives a blue Corolla")
    a.add([first], embedder.embed_documents([first.content]))
    eventually(lambda: lexical_ids(b, "corolla") == [first.id])
    a.update_metadata([msgspec.structs.replace(first, superseded_by="elsewhere")])
    second = make_memory(scope="ann", content="Ann rides a Brompton folding bike")
    b.add([second], embedder.embed_documents([second.content]))
    eventually(lambda: lexical_ids(a, "brompton") == [second.id])
    eventually(lambda: lexical_ids(b, "corolla") == [])
    eventually(lambda: a._lexical.count("ann") == b._lexical.count("ann") == 1)  # the index itself followed


def test_a_store_reopened_soon_catches_up_through_the_feed(
    tmp_path: Path, embedder: Any, chroma_server: Any, pair: tuple[ChromaStore, ChromaStore]
) -> None:
    a, b = pair
    collection = a._col.name
    b.close()
    added = make_memory(scope="ann", content="Ann learns the oboe")
    a.add([added], embedder.embed_documents([added.content]))
    reopened = ChromaStore(
        data_dir=tmp_path / "b",
        url=chroma_server.url,
        collection=collection,
        embedder_id=embedder.model_id,
        dimensions=embedder.dimensions,
    )
    try:
        assert lexical_ids(reopened, "oboe") == [added.id]  # at open, before any poll
    finally:
        reopened.close()
