"""A model's candidates in the rules' form (conform) and its plans inside the invariants (guarded)."""

from __future__ import annotations

from typing import Any

from tap.candidates import CandidateMemory
from tap.extract.model_candidates import conform, guarded
from tap.extract.reconcile import Plan
from tap.ingest.chunker import Chunk, Turn
from tap.records import Memory


def chunk(speaker: str) -> Chunk:
    turn = Turn(id="t1", role="user", speaker=speaker, text="…", timestamp=100.0)
    return Chunk(id="c", scope="s", conversation="x", source="telegram", turns=[turn], tokens=3)


def candidate(**fields: Any) -> CandidateMemory:
    base: dict[str, Any] = {"content": "x", "kind": "fact", "importance": 3, "tags": [], "turn_ids": ["t1"]}
    return CandidateMemory(**(base | {"valid_from": 100.0} | fields))


def stored(holder: str, valid_from: float = 50.0) -> Memory:
    return Memory(
        id=f"m_{holder or 'none'}_{valid_from:g}", scope="s", content="y", holder=holder, valid_from=valid_from
    )


def test_conform_reads_values_and_holders_as_the_rules_write_them() -> None:
    raw = candidate(
        holder="user", slot="user|database", slot_value="postgresql", fulfils="flats", new_value="my physio sessions"
    )
    done = conform(raw, chunk("Priya"))
    assert (done.holder, done.slot, done.slot_value) == ("priya", "priya|database", "postgres")
    assert done.context == "database" and done.fulfils == "home" and done.new_value == "physio session"
    sister = conform(
        candidate(holder="user:sister", slot="user:sister|residence", slot_value="Ljubljana"), chunk("Priya")
    )
    assert (sister.holder, sister.slot) == ("priya:sister", "priya:sister|residence")
    unnamed = conform(candidate(holder="user", slot="user|residence", slot_value="ljubljana"), chunk("User"))
    assert (unnamed.holder, unnamed.context) == ("user", "lives home city where")


def test_guarded_never_replaces_another_holders_statement() -> None:
    sister = candidate(holder="user:sister")
    mine = stored("user")
    assert guarded(sister, Plan(action="supersede", target=mine)).action == "add"
    assert guarded(sister, Plan(action="noop", target=mine)).action == "add"
    assert guarded(candidate(holder="design team"), Plan(action="supersede", target=stored("team"))).action == "add"
    same = guarded(candidate(holder="team"), Plan(action="supersede", target=mine))
    assert same.action == "supersede" and same.target is mine  # the user and their team are one
    alias = guarded(candidate(holder="ana"), Plan(action="supersede", target=stored("user:sister")))
    assert alias.action == "supersede"  # possibly one person: the rules' holder aliases
    assert guarded(candidate(holder="priya:sister"), Plan(action="update", target=stored("priya"))).action == "add"
    assert guarded(candidate(holder="jonas"), Plan(action="supersede", target=stored("priya"))).action == "add"
    own = guarded(candidate(holder="user"), Plan(action="supersede", target=stored("user:daughter")))
    assert own.action == "supersede"  # the user's statement may end one about their daughter
    kept = guarded(sister, Plan(action="supersede", target=mine, also=[stored("user:sister"), stored("user", 60)]))
    assert kept.action == "supersede" and kept.target is not None and kept.target.holder == "user:sister"
    assert kept.also == []


def test_guarded_writes_an_older_statement_as_history_and_leaves_corrections() -> None:
    newer = stored("user", valid_from=200.0)
    history = guarded(candidate(holder="user"), Plan(action="supersede", target=newer))
    assert history.action == "history" and history.target is newer
    fix = candidate(holder="user", correction=["Marit", "Maren"])
    assert guarded(fix, Plan(action="supersede", target=stored("user:teacher"))).action == "supersede"
    death = candidate(holder="user:cat", deceased=["biscuit", "cat"])
    assert guarded(death, Plan(action="supersede", target=stored("user"))).action == "supersede"
    assert guarded(candidate(), Plan(action="add")).action == "add"
