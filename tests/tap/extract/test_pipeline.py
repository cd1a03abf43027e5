"""The rules pipeline end to end on the real store: ingest → chunk → gate → extract → reconcile."""

from __future__ import annotations

from datetime import UTC, datetime

from tap.records import IngestEvent, Message
from tap.wiring.runtime import Runtime

MAY_8 = datetime(2023, 5, 8, 14, 0, tzinfo=UTC).timestamp()


def say(rt: Runtime, conversation: str, *pairs: tuple[str, str], at: float = MAY_8, scope: str = "ana") -> int:
    messages = [
        Message(
            role="user" if who == "Ana" else "assistant",
            content=text,
            name=who,
            id=f"{conversation}:{i}",
            timestamp=at + i,
        )
        for i, (who, text) in enumerate(pairs)
    ]
    return rt.ingestor.ingest(IngestEvent(scope=scope, conversation=conversation, source="proxy", messages=messages))


def active(rt: Runtime, scope: str = "ana") -> list[str]:
    return sorted(m.content for m in rt.store.list_memories(scope=scope, limit=100) if m.kind != "episode")


def test_plain_conversation_becomes_memories_with_dates_and_provenance(rt: Runtime) -> None:
    say(
        rt,
        "c1",
        ("Ana", "I moved to Lisbon last month and I love the tiles."),
        ("Bot", "Lisbon is lovely!"),
        ("Ana", "For the billing service, let's use Postgres."),
        ("Bot", "Good choice."),
    )
    assert rt.worker.drain() >= 1
    memories = {m.content: m for m in rt.store.list_memories(scope="ana", limit=100)}
    moved = next(m for c, m in memories.items() if "moved to Lisbon" in c and m.kind != "episode")
    assert "April 2023" in moved.content and moved.sources == ("c1:0",) and moved.conversation == "c1"
    decision = next(m for m in memories.values() if m.kind == "decision")
    assert "Postgres" in decision.content and decision.sources == ("c1:2",)
    excerpts = [m for m in memories.values() if m.kind == "episode"]
    assert all(len(m.sources) == 1 for m in excerpts)  # the verbatim layer: one turn per excerpt
    assert {m.sources[0] for m in excerpts} == {"c1:0", "c1:2"}  # "Good choice." says too little to keep
    assert any(m.content == "Ana: I moved to Lisbon last month and I love the tiles." for m in excerpts)
    view = rt.memories.recall_json("Where does Ana live now?", scope="ana")
    assert any("Lisbon" in m["content"] for m in view["memories"])


def test_duplicate_delivery_and_reprocessing_write_nothing_twice(rt: Runtime) -> None:
    exchange = (("Ana", "My sister Joana is a marine biologist in Faro."), ("Bot", "How interesting!"))
    say(rt, "c1", *exchange)
    say(rt, "c1", *exchange)
    rt.worker.drain()
    first = active(rt)
    say(rt, "c2", *exchange)  # the same words in another conversation: a duplicate memory
    rt.worker.drain()
    assert active(rt) == first and any("marine biologist" in c for c in first)
    sister = next(
        m
        for m in rt.store.list_memories(scope="ana", limit=50)
        if "marine biologist" in m.content and m.kind != "episode"
    )
    assert set(sister.sources) >= {"c1:0", "c2:0"}


def test_newer_statement_supersedes_without_destroying_history(rt: Runtime) -> None:
    say(rt, "c1", ("Ana", "I work as a nurse at the Santa Maria hospital."), ("Bot", "Noted."))
    rt.worker.drain()
    # "now" says it replaces the old one (without it, a second hospital is a conflict:
    # tests/tap/memories/test_conflicts.py)
    say(rt, "c2", ("Ana", "I work as a nurse at the São José hospital now."), ("Bot", "Noted."), at=MAY_8 + 86400 * 30)
    rt.worker.drain()
    current = [c for c in active(rt) if "nurse" in c]
    assert len(current) == 1 and "São José" in current[0]
    newest = next(m for m in rt.store.list_memories(scope="ana", limit=50) if m.content == current[0])
    chain = rt.memories.chain(newest.id)
    assert [("Santa Maria" in m.content, m.active) for m in chain] == [(True, False), (False, True)]


def test_chit_chat_makes_no_memory_and_private_text_is_never_stored(rt: Runtime) -> None:
    say(rt, "c1", ("Ana", "hi"), ("Bot", "hello!"), ("Ana", "ok thanks"))
    say(
        rt,
        "c2",
        (
            "Ana",
            "I adopted a dog named Bolacha. <private>My bank PIN is 4921.</private> "
            "My API key is sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789.",
        ),
        ("Bot", "Cute!"),
    )
    rt.worker.drain()
    stored = rt.store.list_memories(scope="ana", limit=100, include_superseded=True)
    assert all(m.conversation == "c2" for m in stored)  # nothing at all from the chit-chat
    everything = " ".join(m.content for m in stored)
    assert "Bolacha" in everything
    assert "4921" not in everything and "sk-ant-api03" not in everything


def test_scopes_stay_apart(rt: Runtime) -> None:
    say(rt, "c1", ("Ana", "I am allergic to shellfish."), ("Bot", "Noted."), scope="ana")
    rt.worker.drain()
    assert active(rt, "bob") == []
    assert rt.memories.recall_json("allergies?", scope="bob")["memories"] == []


def test_a_name_never_tied_to_a_relation_updates_nobody_else(rt: Runtime) -> None:
    """'Joana moved to Paris' retires the residence of 'my sister Joana', not of another relative."""
    say(rt, "c1", ("Ana", "My sister Joana lives in Madrid. My brother lives in Porto."), ("Bot", "Noted."))
    rt.worker.drain()
    say(rt, "c2", ("Ana", "Marta moved to Paris."), ("Bot", "Noted."), at=MAY_8 + 86400 * 30)
    rt.worker.drain()
    current = active(rt)
    assert any("Madrid" in c for c in current) and any("Porto" in c for c in current), current


def test_an_excerpt_said_again_is_stored_once_citing_both_turns(rt: Runtime) -> None:
    paragraph = (
        "The nightly backup copied the photo library to the NAS and checked every file against its hash. "
        "Two files were skipped because they were open in the editor at the time."
    )
    say(rt, "c1", ("Ana", " ".join([paragraph] * 6)), ("Bot", "Thanks for the log."))  # a paste that repeats itself
    say(rt, "c2", ("Ana", paragraph), ("Bot", "Thanks for the log."), at=MAY_8 + 86400)  # and again, another day
    say(rt, "c3", ("Ana", paragraph.replace("Two files", "Three files")), at=MAY_8 + 2 * 86400)  # one word: news
    rt.worker.drain()
    rt.worker.drain()  # processing again writes nothing twice
    pasted = [m for m in rt.store.list_memories(scope="ana", limit=100) if "nightly backup" in m.content]
    assert sorted((m.conversation, m.sources) for m in pasted) == [("c1", ("c1:0", "c2:0")), ("c3", ("c3:0",))]
