"""`remember`: one statement an agent asks tap to keep, through extraction's reconcile (the real
embedder, the offline rules)."""

from __future__ import annotations

import pytest

from tap.extract.remember import MAX_REMEMBER_CHARS, remember
from tap.language.person import as_first_person
from tap.records import REMEMBERED
from tap.wiring.runtime import Runtime


def test_an_update_supersedes_and_a_restatement_adds_nothing(rt: Runtime) -> None:
    ex = rt.worker.extraction
    berlin = remember(ex, scope="me", text="The user lives in Berlin")
    assert berlin.action == "add" and berlin.memory is not None
    assert (berlin.memory.source, berlin.memory.conversation) == ("mcp", REMEMBERED)
    lisbon = remember(ex, scope="me", text="The user moved to Lisbon")  # the slot rule, read in the first person
    assert lisbon.action == "supersede" and [m.id for m in lisbon.related] == [berlin.memory.id]
    again = remember(ex, scope="me", text="The user moved to Lisbon")
    assert again.action == "noop" and again.memory is not None and lisbon.memory is not None
    assert again.memory.id == lisbon.memory.id
    current = rt.memories.list_memories(scope="me", limit=10)
    assert [m.content for m in current] == ["The user moved to Lisbon"]  # kept as given, not rewritten
    old = rt.memories.get(berlin.memory.id)
    assert old is not None and old.superseded_by == lisbon.memory.id  # history, not deleted


def test_kind_and_importance_are_the_callers_and_text_is_scrubbed_and_bounded(rt: Runtime) -> None:
    ex = rt.worker.extraction
    done = remember(ex, scope="me", text="Always   run the linter before pushing", kind="instruction", importance=5)
    assert done.memory is not None and (done.memory.kind, done.memory.importance) == ("instruction", 5)
    assert done.memory.content == "Always run the linter before pushing"
    with pytest.raises(ValueError, match="nothing to remember"):
        remember(ex, scope="me", text="<private>my secret plan</private>")
    with pytest.raises(ValueError, match=str(MAX_REMEMBER_CHARS)):
        remember(ex, scope="me", text="word " * 1000)


@pytest.mark.parametrize(
    ("said", "spoken"),
    [
        ("The user lives in Berlin", "I live in Berlin"),
        ("User prefers tabs over spaces", "I prefer tabs over spaces"),
        ("The user is allergic to cats", "I am allergic to cats"),
        ("The user no longer eats meat", "I no longer eat meat"),
        ("The user's sister Ana lives in Madrid", "My sister Ana lives in Madrid"),
        ("the user watches films on Fridays", "I watch films on Fridays"),
        ("The team uses Postgres", None),
    ],
)
def test_third_person_statements_read_as_the_users_own(said: str, spoken: str | None) -> None:
    assert as_first_person(said) == spoken
