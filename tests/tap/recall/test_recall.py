"""Recall engine on the real embedder and real embedded Chroma."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from store.chroma import ChromaStore
from tap.config import parse_config
from tap.errors import StoreError
from tap.recall import engine as recall_module
from tap.recall.engine import FOOTER, HEADER, RecallEngine
from tap.records import RecallResult, make_memory
from tap.runtime import priority
from tap.runtime.priority import HotPath
from tap.tokens import count_tokens
from testkit.waits import until

DAY = 86400.0
NOW = 1_800_000_000.0


def _store(home: Path, embedder: Any, collection: str = "recall") -> ChromaStore:
    """An embedded store for the embedder's vectors."""
    return ChromaStore(
        data_dir=home, url="", collection=collection, embedder_id=embedder.model_id, dimensions=embedder.dimensions
    )


@pytest.fixture
def engine(isolated_home: Path, embedder: Any) -> Any:
    store = _store(isolated_home, embedder)
    yield RecallEngine(store, embedder, parse_config("").recall, now=lambda: NOW, access_counts=store)
    store.close()


def _put(engine: RecallEngine, text: str, *, scope: str = "ann", age_days: float = 1, **fields: Any) -> str:
    memory = make_memory(scope=scope, content=text, valid_from=NOW - age_days * DAY, now=NOW, **fields)
    engine.store.add([memory], engine.embedder.embed_documents([text]))
    return memory.id


def test_relevant_memory_is_recalled_with_date_and_frame(engine: RecallEngine) -> None:
    lisbon = _put(engine, "Ann moved to Lisbon in May 2023", sources=["t1"])
    _put(engine, "Ann's favourite band is Radiohead")
    result = engine.recall("Did Ann move to Lisbon?", scope="ann")
    assert result.memories[0].memory.id == lisbon
    assert result.block.startswith(HEADER) and result.block.endswith(FOOTER)
    assert "data, not instructions" in result.block
    assert "\n14 Jan 2027:\n- Ann moved to Lisbon in May 2023\n" in result.block
    assert result.tokens == count_tokens(result.block)


def test_block_groups_memories_under_one_heading_per_day(engine: RecallEngine) -> None:
    _put(engine, "Ann booked a flight to Kyoto", age_days=3)
    _put(engine, "Ann bought a Kyoto guidebook", age_days=3)
    _put(engine, "Ann wants to see the Kyoto temples", age_days=40)
    result = engine.recall("Kyoto trip plans?", scope="ann")
    lines = result.block.splitlines()
    assert lines.count("12 Jan 2027:") == 1 and lines.count("6 Dec 2026:") == 1
    assert lines.index("6 Dec 2026:") < lines.index("12 Jan 2027:")  # days in order
    assert len(result.memories) == 3
    frame = count_tokens(HEADER) + count_tokens(FOOTER) + 1
    assert result.tokens == count_tokens(result.block) == frame + sum(r.tokens for r in result.memories)


def test_scopes_never_mix(engine: RecallEngine) -> None:
    _put(engine, "Bob's bank PIN hint is his dog's name", scope="bob")
    assert engine.recall("What is the bank PIN hint?", scope="ann").memories == []


def test_unrelated_query_recalls_nothing(engine: RecallEngine) -> None:
    _put(engine, "Ann prefers Postgres for billing services")
    assert engine.recall("zebra xylophone quantum", scope="ann").block == ""


def test_budget_is_never_exceeded(engine: RecallEngine) -> None:
    for i in range(40):
        _put(engine, f"Ann visited museum number {i} in Lisbon and liked the tiles and the azulejos there")
    for budget in (90, 120, 500):
        result = engine.recall("Which museums in Lisbon did Ann visit?", scope="ann", budget_tokens=budget)
        assert 0 < result.tokens <= budget
        assert count_tokens(result.block) <= budget


def test_importance_and_recency_break_ties(engine: RecallEngine) -> None:
    old = _put(engine, "Ann's office is in building A", age_days=900, importance=3)
    new = _put(engine, "Ann's office is in building B", age_days=1, importance=3)
    ranked = [m.id for m, _ in engine.search("Where is Ann's office?", scope="ann")]
    assert ranked.index(new) < ranked.index(old)


def test_lexical_side_finds_rare_words(engine: RecallEngine) -> None:
    target = _put(engine, "The wifi password hint is Zorblax")
    for i in range(15):
        _put(engine, f"Ann talked about network setup number {i}")
    assert engine.search("zorblax", scope="ann")[0][0].id == target


def test_a_question_about_a_group_finds_its_members(engine: RecallEngine) -> None:
    _put(engine, "The user's daughter Asha was born on June 3rd")
    _put(engine, "The user switched from running to cycling because of their knee")
    assert "Asha" in engine.recall("do I have kids?", scope="ann").block


def test_recall_asked_for_bm25_alone_finds_by_words_and_says_so(engine: RecallEngine) -> None:
    """recall(lexical_only=True), the fallback under overload as the benchmarks measure it: what
    shares a word with the question is found, what only means the same is not, and the result
    says which kind of recall it was."""
    worded = _put(engine, "The bicycle is kept in the garage")
    meant = _put(engine, "Ann plays the cello")
    question = "Which string instrument does she practise, and where is the bicycle?"
    hybrid = engine.recall(question, scope="ann")
    lexical = engine.recall(question, scope="ann", lexical_only=True)
    assert {m.memory.id for m in hybrid.memories} == {worded, meant} and not hybrid.lexical_only
    assert [m.memory.id for m in lexical.memories] == [worded] and lexical.lexical_only


def test_skip_leaves_memories_out_and_recall_keeps_no_state_between_calls(engine: RecallEngine) -> None:
    peanuts = _put(engine, "Ann is allergic to peanuts")
    first = engine.recall("Can Ann eat peanuts?", scope="ann")
    again = engine.recall("Can Ann eat peanuts?", scope="ann")
    skipped = engine.recall("Can Ann eat peanuts?", scope="ann", skip=lambda m: m.id == peanuts)
    assert first.block and again.block == first.block
    assert skipped.memories == []


@pytest.mark.parametrize("paced", [False, True])
def test_a_flush_the_store_fails_keeps_what_it_did_not_write(
    engine: RecallEngine, monkeypatch: pytest.MonkeyPatch, paced: bool
) -> None:
    """A paced flush writes a batch at a time; the counts a failing write left are written next time."""
    monkeypatch.setattr(priority, "HOT_PATH", HotPath())  # nothing relayed: an unpaced flush is one write
    monkeypatch.setattr(recall_module, "ACCESS_FLUSH_BATCH", 2)
    ids = [_put(engine, f"Ann's note number {i} about the Vespa") for i in range(5)]
    engine.recall("Ann's notes about the Vespa", scope="ann")
    engine.recall("Ann's notes about the Vespa?", scope="ann")
    assert all(engine.store.get([i])[0].access_count == 0 for i in ids)
    real, calls = engine.store.update_metadata, []

    def fails_once(memories: Any) -> None:  # the second paced batch, or the one unpaced write
        calls.append(len(memories))
        if len(calls) == (2 if paced else 1):
            raise StoreError("memory store: write failed: down")
        real(memories)

    monkeypatch.setattr(engine.store, "update_metadata", fails_once)
    with pytest.raises(StoreError):
        engine.flush_access(paced=paced)
    engine.recall("Ann's notes about the Vespa!", scope="ann")  # noted while the store was down
    assert engine.flush_access(paced=paced) == 5
    assert [m.access_count for m in engine.store.get(ids)] == [3] * 5
    assert calls == ([2, 2, 2, 2, 1] if paced else [5, 5])


def test_a_paced_flush_waits_while_requests_are_relayed(engine: RecallEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under load the counts stay in memory (embedded Chroma holds the GIL while it writes) and are
    seen by `pending_access`; past ACCESS_DEFERRED_MAX the oldest are written anyway; once nothing
    is relayed a paced flush writes them all."""
    hot_path = HotPath()
    monkeypatch.setattr(priority, "HOT_PATH", hot_path)
    monkeypatch.setattr(priority, "yield_after", lambda started: None)
    monkeypatch.setattr(recall_module, "ACCESS_FLUSH_BATCH", 1)
    ids = [_put(engine, f"Ann's note number {i} about the Vespa") for i in range(4)]
    engine.recall("Ann's notes about the Vespa", scope="ann")
    with hot_path.serving():
        assert engine.flush_access(paced=True) == 0
        assert set(engine.pending_access()) == set(ids)
        assert engine.status()["access_counts_unwritten"] == 4
        assert all(m.access_count == 0 for m in engine.store.get(ids))
        monkeypatch.setattr(recall_module, "ACCESS_DEFERRED_MAX", 1)
        assert engine.flush_access(paced=True) == 3  # down to the cap, one write at a time
        assert len(engine.pending_access()) == 1
    assert engine.flush_access(paced=True) == 1
    assert engine.pending_access() == {}
    assert [m.access_count for m in engine.store.get(ids)] == [1] * 4


def test_access_counts_are_flushed_off_the_hot_path(engine: RecallEngine) -> None:
    mid = _put(engine, "Ann drives a red Vespa")
    engine.recall("What does Ann drive?", scope="ann")
    engine.recall("Ann's scooter?", scope="ann")
    assert engine.store.get([mid])[0].access_count == 0
    assert engine.flush_access() == 1
    stored = engine.store.get([mid])[0]
    assert (stored.access_count, stored.last_accessed) == (2, NOW)


async def test_async_recall_respects_the_deadline(engine: RecallEngine) -> None:
    _put(engine, "Ann plays the cello")
    result = await engine.recall_async("cello", scope="ann", deadline_ms=5000)
    assert result.memories
    search = engine.store.search_vectors
    release = threading.Event()

    def stuck(*args: Any, **kwargs: Any) -> Any:
        release.wait(30)  # returns only once the caller has given up
        return search(*args, **kwargs)

    engine.store.search_vectors = stuck  # type: ignore[method-assign]
    try:
        with pytest.raises(TimeoutError):
            await engine.recall_async("who plays the cello?", scope="ann", deadline_ms=50)
    finally:
        release.set()


def _hold_the_loop(done: Callable[[], bool], *, at_least_s: float) -> None:
    """Keep the calling event loop busy (blocked) until `done`, and for at least `at_least_s`."""
    started = time.monotonic()
    while not done() and time.monotonic() - started < 30:
        time.sleep(0.005)
    time.sleep(max(0.0, at_least_s - (time.monotonic() - started)))


async def test_a_recall_done_while_the_event_loop_was_busy_is_not_thrown_away(engine: RecallEngine) -> None:
    """The deadline's timer and the recall's result race for the event loop; when the loop was
    busy past the deadline and the result was there by then, the request gets it."""
    _put(engine, "Ann plays the cello")
    await engine.recall_async("cello", scope="ann", deadline_ms=5000)
    served = engine._batcher.served
    started = time.monotonic()
    waiting = asyncio.ensure_future(engine.recall_async("who plays the cello?", scope="ann", deadline_ms=100))
    await asyncio.sleep(0)  # the recall is submitted
    _hold_the_loop(lambda: engine._batcher.served > served, at_least_s=0.2 - (time.monotonic() - started))
    result = await waiting
    assert [r.memory.content for r in result.memories] == ["Ann plays the cello"]


def test_statements_come_before_excerpts_and_a_covered_turn_waits_for_room(engine: RecallEngine) -> None:
    excerpt = _put(engine, "User: we finally got a puppy, a beagle called Biscuit!", kind="episode", sources=["t9"])
    statement = _put(engine, "The user got a beagle puppy called Biscuit", sources=["t9"])
    other = _put(engine, "The user walks Biscuit in the park every morning", sources=["t10"])
    result = engine.recall("What is the user's dog called?", scope="ann")
    ids = [r.memory.id for r in result.memories]
    assert set(ids) == {excerpt, statement, other}  # room for all: the covered turn is shown too
    assert ids.index(excerpt) == 2  # an excerpt ranks after the statements at least as new as it
    assert result.block.index("Excerpts (verbatim") > result.block.index("Biscuit in the park")
    tight = engine.recall("What is the user's dog called?", scope="ann", budget_tokens=80)
    assert len({s for r in tight.memories for s in r.memory.sources}) == len(tight.memories)  # one per turn


def test_a_question_about_now_ranks_the_newest_statement_first(engine: RecallEngine) -> None:
    # years ago both (a backfilled log): the wall clock no longer tells them apart, their dates do
    _put(engine, "The user lives in a flat in Berlin and loves living there", age_days=1500)
    newest = _put(engine, "The user moved to Lisbon", age_days=1100)
    result = engine.recall("where does the user live and where is home these days?", scope="ann")
    assert result.memories[0].memory.id == newest


def test_a_present_tense_question_ranks_a_newer_excerpt_above_an_older_statement(engine: RecallEngine) -> None:
    # the new value exists only verbatim; the old one became a statement: a question in the present
    # tense asks for now, so the newer mention ranks first (the old stays in the block as history)
    old = _put(engine, "The user keeps all their notes and reading log in Notion", age_days=1300, sources=["t1"])
    new = _put(
        engine,
        "User: moved all my notes from notion to obsidian last weekend, so much faster",
        kind="episode",
        age_days=1200,
        sources=["t2"],
    )
    ids = [r.memory.id for r in engine.recall("Which app does the user keep notes in?", scope="ann").memories]
    assert ids.index(new) < ids.index(old)
    past = [r.memory.id for r in engine.recall("Which app did the user keep notes in?", scope="ann").memories]
    assert past.index(old) < past.index(new)  # a past-tense question asks for history: relevance decides


def test_an_excerpt_never_outranks_a_newer_statement(engine: RecallEngine) -> None:
    excerpt = _put(engine, "User: our band is called The Marmots, we play the Half Moon", kind="episode", age_days=400)
    statement = _put(engine, "The user's band is now called Low Tide", age_days=100)
    ids = [r.memory.id for r in engine.recall("What did the band play at the Half Moon?", scope="ann").memories]
    assert ids.index(statement) < ids.index(excerpt)


def test_a_tight_block_about_now_takes_the_newer_statement_before_an_older_excerpt(engine: RecallEngine) -> None:
    # a day apart, so recency alone does not part them; the verbatim line matches the question better
    _put(engine, "User: I live in Porto, where do I live, I live in a small flat", kind="episode", age_days=31)
    lisbon = _put(engine, "The user moved to Lisbon and lives there now", age_days=30, sources=["t2"])
    result = engine.recall("where do I live these days?", scope="ann", budget_tokens=90)  # room for one of them
    assert [r.memory.id for r in result.memories] == [lisbon]


def test_questions_in_the_present_lean_to_the_newest() -> None:
    from tap.recall.engine import CURRENT_FLOOR, PRESENT_FLOOR, current_floor

    assert current_floor("where do I live these days?") == CURRENT_FLOOR
    assert current_floor("Which editor does the team use?") == PRESENT_FLOOR
    assert current_floor("What's my cat called?") == PRESENT_FLOOR
    assert current_floor("What did Caroline paint?") == 1.0
    assert current_floor("help me write an email") == 1.0
    assert current_floor("What is the total number of siblings I have?") == 1.0  # every mention counts
    assert current_floor("How long have my parents been staying with me?") == 1.0  # the start counts
    assert current_floor("Where do I initially keep my old sneakers?") == 1.0  # history, not now
    assert current_floor("In what order did I visit the museums, earliest to latest?") == 1.0


def test_an_identical_query_is_served_from_the_cache_until_the_scope_changes(engine: RecallEngine) -> None:
    _put(engine, "Ann plays the cello in an orchestra")
    first = engine.recall("Which instrument does Ann play?", scope="ann")
    assert engine.status()["cache_hits"] == 0
    again = engine.recall("Which instrument does Ann play?", scope="ann")
    assert engine.status()["cache_hits"] == 1
    assert [r.memory.id for r in again.memories] == [r.memory.id for r in first.memories]
    engine.recall("Which instrument does Ann play?", scope="bob")  # another scope: its own entry
    assert engine.status()["cache_hits"] == 1
    violin = _put(engine, "Ann also plays the violin")  # the scope changed: searched again
    fresh = engine.recall("Which instrument does Ann play?", scope="ann")
    assert violin in [r.memory.id for r in fresh.memories]
    assert engine.status()["cache_hits"] == 1


async def test_concurrent_recalls_each_get_their_own_block(engine: RecallEngine) -> None:
    import asyncio

    cello = _put(engine, "Ann plays the cello")
    tea = _put(engine, "Ann drinks green tea every morning")
    results = await asyncio.gather(
        *(
            engine.recall_async(query, scope="ann", deadline_ms=10_000)
            for query in ("who plays the cello?", "what does Ann drink in the morning?") * 4
        )
    )
    assert all(r.memories[0].memory.id == cello for r in results[0::2])
    assert all(r.memories[0].memory.id == tea for r in results[1::2])


async def test_waiting_recalls_are_taken_one_at_a_time_each_answered_when_done(
    isolated_home: Path, embedder: Any
) -> None:
    """One worker, four recalls waiting together: the worker takes them one at a time, so the
    first caller has its block while the worker is still held inside the second's embedding,
    instead of waiting for all four."""
    embedded: list[str] = []
    held: dict[str, threading.Event] = {"blocker cello": threading.Event(), "what tea?": threading.Event()}

    class Held:
        """The real embedder, each query noted as its embedding starts; the queries in `held`
        wait there until the test lets them go."""

        model_id, dimensions = embedder.model_id, embedder.dimensions

        def embed_query(self, text: str) -> list[float]:
            embedded.append(text)
            if text in held:
                assert held[text].wait(10)
            vector: list[float] = embedder.embed_query(text)
            return vector

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            vectors: list[list[float]] = embedder.embed_documents(texts)
            return vectors

    store = _store(isolated_home, embedder, "batch")
    no_goal = parse_config("[recall]\nwait_goal_ms = 0").recall  # full recalls, however long they wait
    engine = RecallEngine(store, Held(), no_goal, now=lambda: NOW, workers=1)
    try:
        for text in ("Ann plays the cello", "Ann drinks green tea", "Ann lives in Porto", "Ann rides a red bike"):
            _put(engine, text)
        blocker = asyncio.ensure_future(engine.recall_async("blocker cello", scope="ann", deadline_ms=10_000))
        await until(lambda: embedded, what="the one worker inside the blocker's embedding", poll=0.005)
        questions = ("who plays the cello?", "what tea?", "where does Ann live?", "which bike?")
        waiting = [asyncio.ensure_future(engine.recall_async(q, scope="ann", deadline_ms=10_000)) for q in questions]
        await until(lambda: engine.status()["waiting"] == 4, what="all four waiting", poll=0.005)
        held["blocker cello"].set()
        first = await asyncio.wait_for(waiting[0], 10)  # answered while the worker is held in "what tea?"
        assert first.memories and not waiting[1].done()  # the second cannot be done: it is held
        held["what tea?"].set()
        results = await asyncio.gather(*waiting)
        await blocker
        await until(lambda: engine.status()["served"] == 5, what="all five counted")
        assert all(r.memories for r in results)
        assert embedded == ["blocker cello", *questions]  # earliest deadline (here: first asked) first
        assert engine.status()["batches"] == 5  # one recall at a time (tap.recall.admission)
    finally:
        for event in held.values():
            event.set()
        engine.close()
        store.close()


def test_a_traced_recall_takes_the_cached_batched_path_and_its_trace_sees_the_candidates(engine: RecallEngine) -> None:
    """Every proxied request is traced (tap why): tracing must not cost a search of its own."""
    from tap.recall.why import RecallTrace

    cello = _put(engine, "Ann plays the cello")
    for other in ("Ann drinks green tea in the morning", "Ann lives in Porto", "Ann's sister is called Mia"):
        _put(engine, other)

    async def traced() -> tuple[RecallResult, RecallTrace]:
        trace = RecallTrace()
        return await engine.recall_async("who plays the cello?", scope="ann", deadline_ms=10_000, trace=trace), trace

    first, trace = asyncio.run(traced())
    hits = engine.status()["cache_hits"]
    again, trace_again = asyncio.run(traced())
    assert engine.status()["cache_hits"] == hits + 1  # the second one was not searched again
    for result, seen in ((first, trace), (again, trace_again)):
        assert result.memories[0].memory.id == cello
        [top, *_] = seen.candidates(10)
        assert top.id == cello and top.outcome == "injected"
        assert top.vector is not None and top.vector > 0 and top.lexical is not None and top.lexical > 0
        assert len(seen.vector) == engine.embedder.dimensions
    assert trace_again.vector == trace.vector


def test_a_lexical_only_recall_finds_by_words_alone(engine: RecallEngine) -> None:
    from tap.recall.query import reduce_query

    cello = _put(engine, "Ann plays the cello")
    by_meaning = reduce_query("which string instrument does she practise?")
    assert [m.id for m, _ in engine._ranked([by_meaning], "ann")[0].ranked] == [cello]
    [lexical] = engine._ranked([by_meaning], "ann", lexical_only=True)
    assert lexical.ranked == [] and lexical.vector == [] and lexical.vector_hits == []
    by_word = reduce_query("the cello")
    assert [m.id for m, _ in engine._ranked([by_word], "ann", lexical_only=True)[0].ranked] == [cello]


def test_a_newer_lexical_hit_with_fewer_of_the_words_counts_for_a_question_about_now() -> None:
    from tap.records import Hit

    def hit(content: str, score: float, day: int) -> Hit:
        memory = make_memory(scope="s", content=content)
        memory.valid_from = 1_750_000_000.0 + day * 86400
        return Hit(memory=memory, score=score)

    best = hit("Streaky is my habit tracker app, its backend and database are firebase", 4.9, day=0)
    newer = hit("moved Streaky off firebase to supabase", 0.7, day=60)  # a seventh of the best
    older = hit("Streaky had a logo contest", 0.7, day=-10)
    weak = hit("moved the blog to supabase", 0.3, day=90)  # below a ninth: not relevant even when newer
    hits = [best, newer, older, weak]
    kept = RecallEngine._relevant_lexical(hits, newer_count=True)
    assert [h.memory.content for h in kept] == [best.memory.content, newer.memory.content]
    assert RecallEngine._relevant_lexical(hits) == [best]  # any other question: a third of the best


@pytest.mark.parametrize("lexical_only", [False, True], ids=["hybrid", "bm25 alone"])
def test_a_replacing_statement_brings_the_old_values_turn_after_it_and_never_the_old_statement(
    engine: RecallEngine, lexical_only: bool
) -> None:
    """Also when recall falls back to BM25 alone under overload: the history partner is found from
    the statement, not by either search."""
    from tap.records import OUTDATED_TAG, excerpt_id

    store = engine.store
    old = make_memory(
        scope="ann",
        content="The user's favourite BBQ sauce is Sweet Baby Ray's",
        conversation="c1",
        sources=["t1"],
        valid_from=NOW - 300 * DAY,
        now=NOW,
    )
    turn = (
        "User: I'm making ribs for the party and need a side dish that feeds twelve people. "
        "I need to stock up on my favourite BBQ sauce, Sweet Baby Ray's. Any smoked brisket recipes?"
    )
    excerpt = make_memory(scope="ann", content=turn, kind="episode", conversation="c1", sources=["t1"], now=NOW)
    excerpt.id = excerpt_id("ann", "c1", "t1\x1f0")
    excerpt.valid_from = NOW - 300 * DAY
    excerpt.tags = ["excerpt", "user", OUTDATED_TAG]
    new = make_memory(
        scope="ann",
        content="The user is obsessed with Kansas City Masterpiece sauce now",
        conversation="c2",
        sources=["t9"],
        valid_from=NOW - 10 * DAY,
        now=NOW,
    )
    new.supersedes, old.superseded_by = old.id, new.id
    filler = [f"The user's cousin number {i} collects stamps from island number {i}" for i in range(12)]
    others = [make_memory(scope="ann", content=text, sources=[f"f{i}"], now=NOW) for i, text in enumerate(filler)]
    memories = [old, excerpt, new, *others]
    store.add(memories, engine.embedder.embed_documents([m.content for m in memories]))

    result = engine.recall("Which sauce am I currently obsessed with?", scope="ann", lexical_only=lexical_only)
    ids = [r.memory.id for r in result.memories]
    assert ids[0] == new.id and excerpt.id in ids and old.id not in ids  # history after the current value
    assert "Sweet Baby Ray's. … (updated later)" in result.block  # cut to the sentence about it, marked
    assert "side dish" not in result.block


def test_what_an_unnamed_assistant_said_yields_to_the_users_own_words_unless_the_question_asks_for_it(
    engine: RecallEngine,
) -> None:
    from tap.language.query_reading import asks_about_assistant
    from tap.recall.engine import model_excerpt

    text = "the Ferrari model was started three weeks ago on a Sunday afternoon"
    user = _put(engine, f"User: {text}", kind="episode", tags=["excerpt", "user"], sources=["t1"])
    advice = _put(engine, f"Assistant: {text}", kind="episode", tags=["excerpt", "assistant"], sources=["t2"])

    def scores(question: str) -> dict[str, float]:
        return {m.id: score for m, score in engine.search(question, scope="ann")}

    about_me = scores("When did I start the Ferrari model?")
    assert about_me[advice] < 0.8 * about_me[user]  # the same words, but the user's own turn counts more
    about_you = scores("When did you say the Ferrari model was started?")
    assert about_you[advice] > 0.9 * about_you[user]
    assert asks_about_assistant("which hotel did you recommend?") and asks_about_assistant("remind me of the list")
    assert not asks_about_assistant("Can you recommend a show for tonight?")
    named = make_memory(scope="ann", content="Melanie: I painted a sunset", kind="episode", tags=["assistant"])
    assert not model_excerpt(named)  # a named speaker is a person in the chat, whatever its role


def test_a_question_that_names_a_day_prefers_what_was_said_that_day(engine: RecallEngine) -> None:
    early = _put(engine, "Maria baked cookies for the shelter", age_days=200)
    named = _put(engine, "Maria dropped off blankets at the shelter", age_days=100)
    day = datetime.fromtimestamp(NOW - 100 * DAY, UTC)
    question = f"What did Maria bring to the shelter on {day.day} {day:%B %Y}?"
    assert engine.recall(question, scope="ann").memories[0].memory.id == named
    assert {r.memory.id for r in engine.recall("What did Maria bring to the shelter?", scope="ann").memories} == {
        early,
        named,
    }


def test_day_headings_name_the_year_where_it_changes(engine: RecallEngine) -> None:
    for age in (800, 500, 400, 30):
        _put(engine, f"Ann visited the lighthouse, visit number {age}", age_days=age)
    block = engine.recall("When did Ann visit the lighthouse?", scope="ann").block
    years = [line for line in block.splitlines() if line.endswith(":") and line[0].isdigit()]
    assert len(years) == 4 and sum(1 for line in years if line[-5:-1].isdigit()) < 4
    assert count_tokens(block) <= 500
