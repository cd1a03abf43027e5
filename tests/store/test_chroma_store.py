"""ChromaStore's own behaviour beyond the MemoryStore contract (tests/store/test_store_contract.py):
the embedder recorded with the collection, the lexical index rebuilt from Chroma, the data-dir lock,
an unreachable server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from store import chroma
from store.chroma import ChromaStore
from store.lexical import LexicalIndex
from tap.errors import StoreError
from tap.records import Memory, make_memory
from tap.runtime import priority
from tap.runtime.priority import HotPath


def _add(store: ChromaStore, embedder: Any, *texts: str, scope: str = "ann", **fields: Any) -> list[Memory]:
    memories = [make_memory(scope=scope, content=t, **fields) for t in texts]
    store.add(memories, embedder.embed_documents(texts))
    return memories


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
        assert [h.memory.id for h in reopened.search_text(["kubernetes"], scope="ann", k=3)[0]] == [memory.id]
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


def test_two_embedded_stores_in_one_process_each_keep_their_own_memories(tmp_path: Path, embedder: Any) -> None:
    """Chroma's settings are read once per process (store.chroma._settings_template): stores opened
    side by side still each keep their own folder and memories."""

    def open_in(folder: str) -> ChromaStore:
        return ChromaStore(
            data_dir=tmp_path / folder,
            url="",
            collection="memories",
            embedder_id=embedder.model_id,
            dimensions=embedder.dimensions,
        )

    first, second = open_in("one"), open_in("two")
    try:
        (kept,) = _add(first, embedder, "Ann keeps bees")
        (other,) = _add(second, embedder, "Bo keeps goats")
        assert [m.id for m in first.get([kept.id, other.id])] == [kept.id]
        assert [m.id for m in second.get([kept.id, other.id])] == [other.id]
    finally:
        first.close()
        second.close()
    assert (tmp_path / "one" / "chroma").is_dir() and (tmp_path / "two" / "chroma").is_dir()
    reopened = open_in("one")
    try:
        assert [m.id for m in reopened.get([kept.id, other.id])] == [kept.id]
    finally:
        reopened.close()


def test_a_store_opened_again_where_its_folder_was_removed_and_made_anew_can_write(
    tmp_path: Path, embedder: Any
) -> None:
    """Closing a store closes Chroma's client: otherwise Chroma kept its database open for the
    process, and the next store at that path wrote to a file that no longer existed."""
    import shutil

    def open_here() -> ChromaStore:
        return ChromaStore(
            data_dir=tmp_path / "home",
            url="",
            collection="memories",
            embedder_id=embedder.model_id,
            dimensions=embedder.dimensions,
        )

    first = open_here()
    _add(first, embedder, "Ann keeps bees")
    first.close()
    shutil.rmtree(tmp_path / "home")
    again = open_here()
    try:
        (kept,) = _add(again, embedder, "Bo keeps goats")
        assert [m.content for m in again.get([kept.id])] == ["Bo keeps goats"]
    finally:
        again.close()


def test_unreachable_server_is_a_store_error(isolated_home: Path, embedder: Any) -> None:
    from testkit.chroma_server import free_port

    with pytest.raises(StoreError, match="connect failed"):
        ChromaStore(
            data_dir=isolated_home,
            url=f"http://127.0.0.1:{free_port()}",
            collection="x-y-z",
            embedder_id=embedder.model_id,
            dimensions=embedder.dimensions,
        )


@pytest.mark.parametrize("relaying", [False, True], ids=["idle", "while-requests-are-relayed"])
def test_a_delete_while_requests_are_relayed_goes_in_small_calls_and_deletes_everything(
    store: ChromaStore, embedder: Any, monkeypatch: pytest.MonkeyPatch, relaying: bool
) -> None:
    """Embedded Chroma holds the GIL while it deletes: with requests in flight a large delete goes
    DELETE_BATCH ids a call (tap.runtime.priority.write_parts); either way every id goes, from both indexes."""
    hot_path = HotPath()  # this test's own: whatever other tests of the process left counted
    monkeypatch.setattr(priority, "HOT_PATH", hot_path)
    if relaying:
        hot_path.enter()
        monkeypatch.setattr(chroma, "DELETE_BATCH", 2)
    doomed = _add(store, embedder, *(f"Ann's note {n} about the garden shed" for n in range(5)))
    kept = _add(store, embedder, "Ann's garden shed is green")
    calls: list[int] = []
    real = store._col.delete
    monkeypatch.setattr(store._col, "delete", lambda ids: calls.append(len(ids)) or real(ids=ids))
    assert store.delete([m.id for m in doomed] + ["m_unknown"]) == 5
    assert calls == ([2, 2, 1] if relaying else [5])
    assert store.get([m.id for m in doomed]) == [] and store.stats().by_scope == {"ann": 1}
    assert [h.memory.id for h in store.search_text(["garden shed"], scope="ann", k=10)[0]] == [kept[0].id]


def test_a_delete_leaves_no_trace_of_the_memory_in_the_lexical_index_file(isolated_home: Path, embedder: Any) -> None:
    ids = {"embedder_id": embedder.model_id, "dimensions": embedder.dimensions}
    store = ChromaStore(data_dir=isolated_home, url="", collection="erase", **ids)
    try:
        doomed, kept = _add(store, embedder, "Ann's locker code is Zanzibar", "Ann likes tea")
        store.delete([doomed.id])
        files = b"".join(p.read_bytes() for p in isolated_home.glob("lexical-erase.db*"))
        assert b"Zanzibar" not in files and b"Ann likes tea" in files
    finally:
        store.close()
