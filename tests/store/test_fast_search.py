"""The embedded store's fast read paths: the lexical index's id map and records, and the
unfiltered-then-checked vector search, which must give the same answers as Chroma's filtered query."""

from __future__ import annotations

import math
import random
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from store.chroma import ChromaStore
from store.lexical import LexicalIndex, scope_key
from tap.records import Memory, make_memory


def _row(memory_id: str, scope: str, content: str) -> tuple[str, str, str, bytes, bytes | None]:
    return (memory_id, scope, content, f'{{"id": "{memory_id}"}}'.encode(), None)


def test_records_read_before_a_write_never_come_back_stale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    index = LexicalIndex(tmp_path / "lexical.db")
    try:
        index.upsert([(f"m{i}", "ann", f"note {i}", f"v1 of m{i}".encode(), None) for i in range(3)])
        assert index.records(["m0", "m1", "m2"]) == {f"m{i}": f"v1 of m{i}".encode() for i in range(3)}
        index.upsert([("m0", "ann", "note 0", b"v2 of m0", None)])  # rewritten after it was read
        index.remove(["m1"])
        assert index.records(["m0", "m1", "m2"]) == {"m0": b"v2 of m0", "m2": b"v1 of m2"}

        def failing(*args: Any, **kwargs: Any) -> Any:
            raise sqlite3.OperationalError("disk I/O error")

        assert index.search("note", scope="ann", k=3)  # terms are kept now: every write counts them
        monkeypatch.setattr(index, "_term_changes", failing)  # so this write fails after its rows changed
        with pytest.raises(sqlite3.OperationalError):
            index.upsert([("m2", "ann", "note 2", b"v2 of m2", None)])
        monkeypatch.undo()
        assert index.records(["m2"]) == {"m2": b"v1 of m2"}  # rolled back: the old record, read again
        index.clear()
        assert index.records(["m0", "m2"]) == {}
    finally:
        index.close()


def test_a_record_read_while_a_write_commits_is_not_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """records() reads without the index's lock, on its thread's own connection: a read that began
    before a write of the same id ended returns what it read, but never keeps it in the cache."""
    import threading

    index = LexicalIndex(tmp_path / "lexical.db")
    try:
        index.upsert([("m0", "ann", "note", b"v1", None)])
        read, resume = threading.Event(), threading.Event()
        real_reader = index._reader

        class Paused:
            """The reader connection, holding its rows back until the write is done."""

            def __init__(self, db: sqlite3.Connection) -> None:
                self.db = db

            def execute(self, sql: str, params: Any = ()) -> Held:
                rows = self.db.execute(sql, params).fetchall()
                read.set()
                assert resume.wait(10)
                return Held(rows)

        class Held:
            """Rows already read, handed out as a cursor would."""

            def __init__(self, rows: list[Any]) -> None:
                self.rows = rows

            def fetchone(self) -> Any:
                return self.rows[0] if self.rows else None

            def fetchall(self) -> list[Any]:
                return self.rows

            def __iter__(self) -> Any:
                return iter(self.rows)

        monkeypatch.setattr(index, "_reader", lambda: Paused(real_reader()))
        got: list[dict[str, bytes]] = []
        reading = threading.Thread(target=lambda: got.append(index.records(["m0"])))
        reading.start()
        assert read.wait(10)  # it has read v1 ...
        index.upsert([("m0", "ann", "note", b"v2", None)])  # ... and v2 is committed before it returns
        resume.set()
        reading.join(10)
        assert got == [{"m0": b"v1"}]  # what it read, as of before the write
        monkeypatch.undo()
        assert index.records(["m0"]) == {"m0": b"v2"}  # nothing stale was kept
    finally:
        index.close()


def test_a_record_read_while_a_write_is_uncommitted_is_dropped_when_it_commits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read during a write transaction sees the record before it (WAL) and may keep it; the
    transaction's end drops it, so the next read gets the committed record."""
    import threading

    index = LexicalIndex(tmp_path / "lexical.db")
    try:
        index.upsert([("m0", "ann", "note", b"v1", None)])
        assert index.search("note", scope="ann", k=1)  # terms are kept: writes count theirs in the transaction
        inside, read_done = threading.Event(), threading.Event()
        real = index._term_changes

        def held_open(delta: Any) -> Any:
            changes = real(delta)
            inside.set()
            assert read_done.wait(10)  # the transaction stays open until the read is done
            return changes

        monkeypatch.setattr(index, "_term_changes", held_open)
        writing = threading.Thread(target=lambda: index.upsert([("m0", "ann", "note", b"v2", None)]))
        writing.start()
        assert inside.wait(10)
        assert index.records(["m0"]) == {"m0": b"v1"}  # not committed yet
        read_done.set()
        writing.join(10)
        assert index.records(["m0"]) == {"m0": b"v2"}
    finally:
        index.close()


def test_upsert_replaces_by_id_and_counts_per_scope(tmp_path: Path) -> None:
    index = LexicalIndex(tmp_path / "lexical.db")
    try:
        index.upsert([_row("a", "ann", "Ann plays the cello"), _row("b", "ann", "Ann likes tea")])
        index.upsert([_row("a", "bob", "Bob plays the cello")])  # same id: replaced, scope moved
        assert (index.count(), index.count("ann"), index.count("bob")) == (2, 1, 1)
        assert [i for i, _ in index.search("cello", scope="bob", k=5)] == ["a"]
        assert index.search("cello", scope="ann", k=5) == []
        assert index.in_scope(["a", "b", "zzz"], "ann") == {"b"}
        assert set(index.records(["a", "b", "zzz"])) == {"a", "b"}
        index.remove(["a", "missing"])
        assert (index.count(), index.count("bob")) == (1, 0)
        assert index.search("cello", scope="bob", k=5) == []
        fts_rows = index._db.execute("SELECT count(*) FROM memories").fetchone()[0]
        assert fts_rows == 1  # no stale FTS row left behind by the replace or the remove
    finally:
        index.close()


def test_counts_survive_reopening(tmp_path: Path) -> None:
    index = LexicalIndex(tmp_path / "lexical.db")
    index.upsert([_row(f"m{i}", "ann" if i % 3 else "bob", f"note {i}") for i in range(30)])
    index.close()
    reopened = LexicalIndex(tmp_path / "lexical.db")
    try:
        assert (reopened.count("ann"), reopened.count("bob")) == (20, 10)
    finally:
        reopened.close()


def test_an_index_without_entries_is_rebuilt_from_chroma(isolated_home: Path, embedder: Any) -> None:
    store = _open(isolated_home, embedder)
    memory = make_memory(scope="ann", content="Kubernetes cluster upgrade planned")
    store.add([memory], embedder.embed_documents([memory.content]))
    store.close()
    db = sqlite3.connect(isolated_home / "lexical-fast.db")  # an index written before `entries` existed
    db.execute("DROP TABLE entries")
    db.execute("DROP TABLE schema_versions")  # (and before numbered migrations)
    db.commit()
    db.close()
    reopened = _open(isolated_home, embedder)
    try:
        assert [h.memory.id for h in reopened.search_text(["kubernetes"], scope="ann", k=3)[0]] == [memory.id]
        hits = reopened.search_vectors([embedder.embed_query("cluster upgrade")], scope="ann", k=3)[0]
        assert [_fields(h.memory) for h in hits] == [_fields(memory)]
    finally:
        reopened.close()


def test_an_index_from_before_scope_keys_is_rebuilt_from_chroma(isolated_home: Path, embedder: Any) -> None:
    store = _open(isolated_home, embedder)
    memory = make_memory(scope="ann", content="Kubernetes cluster upgrade planned")
    store.add([memory], embedder.embed_documents([memory.content]))
    store.close()
    db = sqlite3.connect(isolated_home / "lexical-fast.db")  # the schema of an index without scope keys
    db.execute("DROP TABLE memories")
    db.execute("CREATE VIRTUAL TABLE memories USING fts5(id UNINDEXED, scope UNINDEXED, content)")
    db.execute("DROP TABLE schema_versions")  # (and before numbered migrations)
    db.commit()
    db.close()
    reopened = _open(isolated_home, embedder)
    try:
        assert [h.memory.id for h in reopened.search_text(["kubernetes"], scope="ann", k=3)[0]] == [memory.id]
    finally:
        reopened.close()


def test_a_search_ranks_only_its_scope(tmp_path: Path) -> None:
    index = LexicalIndex(tmp_path / "lexical.db")
    try:
        index.upsert([_row(f"b{i}", "bob", "cello cello cello lessons") for i in range(50)])
        index.upsert([_row("a1", "ann:work/x", "Ann takes cello lessons"), _row("a2", "ann:work/x", "Ann likes tea")])
        assert [i for i, _ in index.search("cello lessons", scope="ann:work/x", k=10)] == ["a1"]
        assert len(index.search("cello", scope="bob", k=100)) == 50
    finally:
        index.close()


def _fields(memory: Memory) -> tuple[object, ...]:
    """A memory's fields but its timestamps (Chroma keeps fewer digits of floats than the index)."""
    names = ("id", "scope", "content", "kind", "importance", "sources", "superseded_by", "access_count", "tags")
    return tuple(getattr(memory, name) for name in names)


def _same_times(a: Memory, b: Memory) -> bool:
    names = ("created_at", "updated_at", "valid_from", "last_accessed")
    return all(math.isclose(getattr(a, n), getattr(b, n), abs_tol=0.01) for n in names)


def _open(home: Path, embedder: Any, exact_scope_max: int = 4096) -> ChromaStore:
    return ChromaStore(
        data_dir=home,
        url="",
        collection="fast",
        embedder_id=embedder.model_id,
        dimensions=embedder.dimensions,
        exact_scope_max=exact_scope_max,
    )


@pytest.mark.parametrize("exact_scope_max", [0, 4096], ids=["over-fetched window", "small scopes in memory"])
def test_fast_vector_search_matches_exact_search(isolated_home: Path, embedder: Any, exact_scope_max: int) -> None:
    """Several scopes of different sizes plus superseded versions: the fast path returns active
    memories of the scope only, best first, with the same records as the store, and finds what an
    exact search finds (HNSW is approximate: aggregated recall, not per-query identity)."""
    rng = np.random.default_rng(3)
    pick = random.Random(3)
    store = _open(isolated_home, embedder, exact_scope_max)
    try:
        memories: list[Memory] = []
        for index in range(600):
            scope = pick.choices(["big", "mid", "tiny"], weights=[80, 18, 2])[0]
            memories.append(make_memory(scope=scope, content=f"memory {index} of {scope}", importance=1 + index % 5))
        vectors = rng.normal(size=(len(memories), embedder.dimensions)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        store.add(memories, vectors.tolist())
        superseded = [m for m in memories if m.scope in ("big", "mid")][::4]
        for old in superseded:
            old.superseded_by = "m_newer"
        store.update_metadata(superseded)
        found = expected = 0
        for _ in range(15):
            query = rng.normal(size=embedder.dimensions)
            query /= np.linalg.norm(query)
            for scope in ("big", "mid", "tiny", "nobody"):
                allowed = [i for i, m in enumerate(memories) if m.scope == scope and m.active]
                exact = sorted(allowed, key=lambda i: -float(vectors[i] @ query))
                for k in (1, 10, 40):
                    fast = store.search_vectors([query.tolist()], scope=scope, k=k)[0]
                    assert len(fast) == min(k, len(allowed))
                    assert all(h.memory.active and h.memory.scope == scope for h in fast)
                    assert [h.score for h in fast] == sorted((h.score for h in fast), reverse=True)
                    stored = store.get([h.memory.id for h in fast])
                    assert [_fields(h.memory) for h in fast] == [_fields(m) for m in stored]
                    assert all(_same_times(h.memory, m) for h, m in zip(fast, stored, strict=True))
                    found += len({h.memory.id for h in fast} & {memories[i].id for i in exact[:k]})
                    expected += min(k, len(allowed))
        assert found >= 0.95 * expected
    finally:
        store.close()


def test_batched_search_with_a_floor_returns_a_prefix_of_the_full_search(isolated_home: Path, embedder: Any) -> None:
    """Near every query sit many superseded versions, so the over-fetched window holds few active
    memories of the scope: with `at_least` the batch answers from that window (never fewer than
    asked while the scope has them), and what it returns is the start of the full answer. (Small
    scopes are searched exactly in memory instead; this one is treated as a large one.)"""
    rng = np.random.default_rng(5)
    store = _open(isolated_home, embedder, exact_scope_max=0)
    try:
        queries = rng.normal(size=(6, embedder.dimensions)).astype(np.float32)
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
        memories: list[Memory] = []
        rows: list[np.ndarray] = []
        for q, query in enumerate(queries):
            for version in range(40):  # 40 versions of one fact near each query, 39 of them superseded
                memories.append(make_memory(scope="ana", content=f"fact {q} version {version}"))
                noise = rng.normal(size=embedder.dimensions).astype(np.float32) * 0.02
                rows.append((query + noise) / np.linalg.norm(query + noise))
        others = rng.normal(size=(400, embedder.dimensions)).astype(np.float32)
        for i, row in enumerate(others):
            memories.append(make_memory(scope="other" if i % 2 else "ana", content=f"unrelated {i}"))
            rows.append(row / np.linalg.norm(row))
        store.add(memories, np.stack(rows).tolist())
        retired = [m for i, m in enumerate(memories[:240]) if i % 40 != 39]
        for old in retired:
            old.superseded_by = "m_newer"
        store.update_metadata(retired)
        full = store.search_vectors(queries.tolist(), scope="ana", k=8)
        floored = store.search_vectors(queries.tolist(), scope="ana", k=8, at_least=1)
        for exact, quick in zip(full, floored, strict=True):
            assert len(exact) == 8 and 1 <= len(quick) <= 8
            assert [h.memory.id for h in quick] == [h.memory.id for h in exact[: len(quick)]]
            assert all(h.memory.active for h in quick)
        assert any(len(quick) < 8 for quick in floored)  # the window did cut some answers short
    finally:
        store.close()


def test_only_the_rarest_terms_within_the_postings_budget_are_searched() -> None:
    from store.lexical import MAX_TERMS, POSTINGS_BUDGET, informative

    terms = ["common", "rare", "nothing", "middling"]
    assert informative(terms, [POSTINGS_BUDGET, 3, 0, 500]) == ["rare", "middling"]
    assert informative(["common"], [10 * POSTINGS_BUDGET]) == ["common"]  # the rarest is always kept
    many = [f"t{n}" for n in range(40)]
    assert informative(many, [1] * 40) == many[:MAX_TERMS]


def test_a_common_term_is_left_out_when_rare_ones_fill_the_budget(tmp_path: Path, monkeypatch: Any) -> None:
    import store.lexical

    monkeypatch.setattr(store.lexical, "POSTINGS_BUDGET", 10)
    index = LexicalIndex(tmp_path / "lex.db")
    rows = [_row(f"c{n}", "ann", f"Ann walked the dog on day {n}") for n in range(30)]
    rows.append(_row("rare", "ann", "Ann took the dog to the vet in Porto"))
    index.upsert(rows)
    assert [i for i, _ in index.search("did Ann take the dog to Porto?", scope="ann", k=5)] == ["rare"]
    # alone, a term over the budget is searched among the newest memories holding about that many
    newest = [i for i, _ in index.search("the dog", scope="ann", k=50)]
    assert 8 <= len(newest) <= 12 and set(newest) <= {f"c{n}" for n in range(18, 30)} | {"rare"}
    index.close()


def test_the_best_hits_are_the_exact_bm25_top_k_with_ties_by_id(tmp_path: Path) -> None:
    """Ranked by rowid, then the ids of twice k read: the same hits, in the same order, as ranking
    with the ids, also where ties (identical texts) run across the k-th place."""
    index = LexicalIndex(tmp_path / "lex.db")
    rng = random.Random(11)
    words = ["tea", "cello", "porto", "bike", "dog", "lisbon"]
    ids = [f"m{n:03d}" for n in range(300)]
    rng.shuffle(ids)  # written in another order than their ids sort
    index.upsert([_row(i, "ann", " ".join(rng.choice(words) for _ in range(rng.randint(1, 3)))) for i in ids])
    index.upsert([_row(f"b{n}", "bob", "tea and cello") for n in range(50)])
    for query in ("tea", "cello porto", "dog bike lisbon", "porto", "tea cello"):
        for k in (1, 5, 20, 80):
            terms = " OR ".join(f'"{w}"' for w in query.split())
            match = f"scopekey : {scope_key('ann')} AND content : ({terms})"
            expected = [
                (row[0], -float(row[1]))
                for row in index._db.execute(
                    "SELECT id, bm25(memories, 0.0, 0.0, 1.0) AS rank FROM memories WHERE memories MATCH ? "
                    "ORDER BY rank, id LIMIT ?",
                    (match, k),
                )
            ]
            assert index._best(match, 0, k) == expected
    index.close()


def test_the_kept_term_counts_follow_every_write(tmp_path: Path, monkeypatch: Any) -> None:
    """Document frequencies are counted once, then moved by writes: after adds, replacements
    (same id, other words), removals and a clear, they equal a fresh count by another reader."""
    import store.lexical

    index = LexicalIndex(tmp_path / "lex.db")
    words = ["walked", "dogs", "porto", "vet", "cats", "bikes", "lisbon"]
    rng = random.Random(7)
    vocabulary = ["walks", "dog", "Porto", "vets", "cat", "bike", "Lisbon", "the", "and", "walking"]

    def text() -> str:
        return " ".join(rng.choice(vocabulary) for _ in range(rng.randint(1, 6)))

    index.upsert([_row(f"m{n}", f"s{n % 3}", text()) for n in range(40)])
    for _ in range(6):
        index.search("walked dogs in porto", scope="s0", k=5)  # fills the kept counts
        kept = index._frequencies(words)
        fresh = LexicalIndex(tmp_path / "lex.db")
        assert kept == fresh._frequencies(words)
        fresh.close()
        assert any(kept)
        index.upsert([_row(f"m{rng.randrange(60)}", f"s{rng.randrange(3)}", text()) for _ in range(8)])
        index.remove([f"m{rng.randrange(60)}" for _ in range(5)])
    # past the cap the kept words and counts start over, and the counts are still right
    monkeypatch.setattr(store.lexical, "FREQUENCY_CACHE_MAX", 2)
    for _ in range(3):
        fresh = LexicalIndex(tmp_path / "lex.db")
        assert index._frequencies(words) == fresh._frequencies(words)
        fresh.close()
    index.clear()
    assert index._frequencies(words) == [0] * len(words)
    index.upsert([_row("a", "s0", "walking the dog")])
    assert index._frequencies(["walk", "dog", "cats"]) == [1, 1, 0]
    index.close()


def test_a_scope_is_loaded_from_the_vectors_the_index_keeps(isolated_home: Path, embedder: Any) -> None:
    store = _open(isolated_home, embedder)
    other = [make_memory(scope="bob", content=f"Bob note {n}") for n in range(20)]
    store.add(other, embedder.embed_documents([m.content for m in other]))
    memory = make_memory(scope="ann", content="Ann restores old bikes")
    vector = embedder.embed_documents([memory.content])[0]
    store.add([memory], [vector])
    ((memory_id, packed),) = store._lexical.vectors("ann")
    assert memory_id == memory.id and packed is not None
    assert np.allclose(np.frombuffer(packed, np.float16), vector, atol=1e-3)
    store.close()
    reopened = _open(isolated_home, embedder)
    try:
        reopened._collection_size()  # (cached until a write)
        reopened._col = None  # Chroma is not read to load the scope
        hits = reopened.search_vectors([embedder.embed_query("bicycle repair")], scope="ann", k=3)[0]
        assert [h.memory.id for h in hits] == [memory.id]
    finally:
        reopened.close()


def test_an_index_without_vectors_gets_them_from_chroma_once(isolated_home: Path, embedder: Any) -> None:
    store = _open(isolated_home, embedder)
    other = [make_memory(scope="bob", content=f"Bob note {n}") for n in range(20)]
    store.add(other, embedder.embed_documents([m.content for m in other]))
    memory = make_memory(scope="ann", content="Ann restores old bikes")
    store.add([memory], embedder.embed_documents([memory.content]))
    store.close()
    db = sqlite3.connect(isolated_home / "lexical-fast.db")  # an index from before the vector column
    db.execute("UPDATE entries SET vector = NULL")
    db.commit()
    db.close()
    reopened = _open(isolated_home, embedder)
    try:
        hits = reopened.search_vectors([embedder.embed_query("bicycle repair")], scope="ann", k=3)[0]
        assert [h.memory.id for h in hits] == [memory.id]
        assert reopened._lexical.vectors("ann")[0][1] is not None
    finally:
        reopened.close()


def test_only_an_unclean_close_makes_the_next_open_compare_the_index(isolated_home: Path, embedder: Any) -> None:
    store = _open(isolated_home, embedder)
    memory = make_memory(scope="ann", content="Kubernetes cluster upgrade planned")
    store.add([memory], embedder.embed_documents([memory.content]))
    store.close()
    index = LexicalIndex(isolated_home / "lexical-fast.db")
    assert index.clean_total() == 1
    index.close()
    crashed = _open(isolated_home, embedder)
    assert crashed._lexical.clean_total() is None  # from now on, until a clean close
    crashed._lexical.remove([memory.id])  # a write that reached Chroma but not the index, then a crash
    crashed._lexical.close()
    crashed._release_lock()
    reopened = _open(isolated_home, embedder)
    try:
        assert [h.memory.id for h in reopened.search_text(["kubernetes"], scope="ann", k=3)[0]] == [memory.id]
    finally:
        reopened.close()


def test_warming_loads_the_scopes_searched_in_memory(isolated_home: Path, embedder: Any) -> None:
    store = _open(isolated_home, embedder)
    for scope, count in (("ann", 5), ("bob", 30)):
        memories = [make_memory(scope=scope, content=f"{scope} note {n}") for n in range(count)]
        store.add(memories, embedder.embed_documents([m.content for m in memories]))
    store.close()
    reopened = _open(isolated_home, embedder)
    try:
        assert not reopened._small.cached("ann")
        assert reopened.warm_vectors() == 2
        assert reopened._small.cached("ann") and reopened._small.cached("bob")
    finally:
        reopened.close()


def _reference(index: LexicalIndex, query: str, scope: str, k: int) -> list[tuple[str, float]]:
    """The same search ranked by FTS5's bm25() in SQL (a fresh reader: no kept postings)."""
    from store.lexical import informative, query_terms

    terms = query_terms(query)
    with index._lock:
        df = index._frequencies(terms)
        kept = informative(terms, df)
        if not kept or index._counts.get(scope, 0) == 0:
            return []
        first_row = index._newest_rows(min(n for t, n in zip(terms, df, strict=True) if t in kept))
        return index._ranked_by_fts5(kept, scope, first_row, k)


@pytest.mark.parametrize("scopes", [1, 3])
def test_postings_in_memory_rank_exactly_as_fts5_bm25_through_every_write(
    tmp_path: Path, monkeypatch: Any, scopes: int
) -> None:
    """store.bm25 gives FTS5's ranking, scores to the bit and ties by id, while its kept postings
    follow adds, replacements (same id, other words, other scope), removals and a clear; past the
    cache's cap too. Lengths vary (bm25 weighs them) and words repeat in a text (term frequency)."""
    import store.bm25

    index = LexicalIndex(tmp_path / "lex.db")
    rng = random.Random(scopes)
    vocabulary = "walks dog Porto vets cat bikes Lisbon walking dogs bike the tea cello garden".split()
    queries = ["walked dogs in porto", "a cat and a bike", "cello tea garden lisbon", "vet", "walking walks dog"]

    def text() -> str:
        return " ".join(rng.choice(vocabulary) for _ in range(rng.randint(1, 12)))

    def scope() -> str:
        return f"s{rng.randrange(scopes)}"

    def check() -> None:
        fresh = LexicalIndex(tmp_path / "lex.db")
        try:
            for _ in range(2):  # the first time terms may be missing (FTS5 ranks), the second from memory
                for query in queries:
                    for name in {f"s{n}" for n in range(scopes)}:
                        found = index.search(query, scope=name, k=7)
                        assert found == _reference(fresh, query, name, 7), (query, name)
                assert index._postings.wait_idle()
        finally:
            fresh.close()

    index.upsert([(f"m{n}", scope(), text(), b"{}", None) for n in range(120)])
    assert index._large_scope("s0")
    check()
    assert index._postings.held > 0 and index._postings.served > 0  # served from kept postings
    shown = index.postings_status()
    assert shown["row_table"] and shown["terms"] > 0 and shown["searches_served"] == index._postings.served
    for _ in range(5):
        index.upsert([(f"m{rng.randrange(160)}", scope(), text(), b"{}", None) for _ in range(15)])
        index.remove([f"m{rng.randrange(160)}" for _ in range(8)])
        check()
    monkeypatch.setattr(store.bm25, "POSTINGS_CACHE_MAX", 5)
    check()
    index.clear()
    assert index.search("dog", scope="s0", k=3) == []
    index.upsert([("a", "s0", "walking the dog", b"{}", None), ("b", "s0", "a dog", b"{}", None)])
    for _ in range(2):
        assert [i for i, _ in index.search("dogs walked", scope="s0", k=3)] == ["a", "b"]
        assert index._postings.wait_idle()
    index.close()


def test_of_many_rows_tying_for_the_last_places_the_newest_compete_on_both_paths(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """A question whose words are in every memory gives them all one score: only the newest
    TIE_ROWS_MAX of the tying rows compete (then by id), from kept postings as from FTS5."""
    import store.bm25

    monkeypatch.setattr(store.bm25, "TIE_ROWS_MAX", 4)
    index = LexicalIndex(tmp_path / "lex.db")
    try:
        index.upsert([(f"a{n:02}", "s0", "the dog walks", b"{}", None) for n in range(30)])  # a00 oldest
        index.upsert([("z99", "s0", "the dog walks the dog", b"{}", None)])  # a better score: always first
        want = ["z99", "a26", "a27"]  # of the tying a00..a29, the newest four compete: a26..a29
        assert [i for i, _ in _reference(index, "dog walks", "s0", 3)] == want
        for _ in range(2):  # FTS5 until the row table is read, then the kept postings
            assert [i for i, _ in index.search("dog walks", scope="s0", k=3)] == want
            assert index._postings.wait_idle()
        assert index._postings.served > 0
        monkeypatch.setattr(store.bm25, "TIE_ROWS_MAX", 100)  # all of them compete: ties by id
        assert [i for i, _ in index.search("dog walks", scope="s0", k=3)] == ["z99", "a00", "a01"]
        assert [i for i, _ in _reference(index, "dog walks", "s0", 3)] == ["z99", "a00", "a01"]
    finally:
        index.close()


def test_a_read_of_the_row_table_that_a_write_overlaps_is_thrown_away(tmp_path: Path, monkeypatch: Any) -> None:
    """The row table (every row's length and scope) is read on a background thread with its own
    connection; a write committed after that read and before its install spoils it: it is never
    installed, is read again, and the searches then see the written row with its length."""
    import threading

    index = LexicalIndex(tmp_path / "lex.db")
    postings = index._postings
    read_done, go_on = threading.Event(), threading.Event()
    real_read = postings._read_rows

    def held_read(reader: sqlite3.Connection) -> Any:
        found = real_read(reader)
        read_done.set()
        go_on.wait(10)
        return found

    monkeypatch.setattr(postings, "_read_rows", held_read)
    try:
        index.upsert([("a", "s", "the dog barks", b"{}", None), ("c", "s", "a cat", b"{}", None)])
        assert [i for i, _ in index.search("dog", scope="s", k=5)] == ["a"]  # FTS5 while the table is read
        assert read_done.wait(10)
        index.upsert([("b", "s", "a dog sleeps on the long warm sofa all day", b"{}", None)])  # after the read
        go_on.set()
        assert postings.wait_idle()
        assert postings._rows is None  # the read was thrown away
        for _ in range(2):  # read again (FTS5 meanwhile), then ranked from kept postings
            assert index.search("dog", scope="s", k=5) == _reference(index, "dog", "s", 5)
            assert postings.wait_idle()
        assert postings.served >= 1
    finally:
        go_on.set()
        index.close()


def test_a_small_scope_of_a_shared_index_is_ranked_by_fts5(tmp_path: Path) -> None:
    """A scope that is a small share of the index is ranked by FTS5 (its match on the scope key
    reads that scope's postings only); nothing is kept in memory for it, and the answer is the same."""
    index = LexicalIndex(tmp_path / "lex.db")
    try:
        index.upsert([(f"b{n}", "big", f"the dog walks {n}", b"{}", None) for n in range(40)])
        index.upsert([("s1", "small", "my dog Rex", b"{}", None), ("s2", "small", "a cat", b"{}", None)])
        assert not index._large_scope("small") and index._large_scope("big")
        assert [i for i, _ in index.search("dog", scope="small", k=5)] == ["s1"]
        assert not index._postings.keeps_terms
        for _ in range(2):  # the row table is read in the background, then terms are kept
            assert index.search("dog", scope="big", k=3) == _reference(index, "dog", "big", 3)
            assert index._postings.wait_idle()
        assert index._postings.keeps_terms
        assert [i for i, _ in index.search("dog", scope="small", k=5)] == ["s1"]
    finally:
        index.close()


def test_a_failed_read_of_the_row_table_leaves_fts5_ranking_and_is_tried_again(
    tmp_path: Path, monkeypatch: Any, caplog: Any
) -> None:
    """The background read fails (a locked or damaged file): searches go on, ranked by FTS5, the
    failure is logged, and the next search asks for the read again, which then succeeds."""
    index = LexicalIndex(tmp_path / "lex.db")
    postings = index._postings
    real_read = postings._read_rows
    failures = iter([sqlite3.OperationalError("database is locked")])

    def flaky(reader: sqlite3.Connection) -> Any:
        failure = next(failures, None)
        if failure is not None:
            raise failure
        return real_read(reader)

    monkeypatch.setattr(postings, "_read_rows", flaky)
    try:
        index.upsert([("a", "s", "the dog barks", b"{}", None), ("b", "s", "a dog", b"{}", None)])
        expected = _reference(index, "dog", "s", 5)
        assert index.search("dog", scope="s", k=5) == expected
        assert postings.wait_idle()
        assert postings._rows is None and "could not read" in caplog.text
        for _ in range(2):
            assert index.search("dog", scope="s", k=5) == expected
            assert postings.wait_idle()
        assert postings.served >= 1
    finally:
        index.close()
