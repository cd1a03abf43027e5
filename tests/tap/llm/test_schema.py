"""The model's memories as reconcile reads them (tap.llm.schema): annotations checked against each
other, normalised, and dated (a plain event by the day it happened, anything that ends something by
when it was said)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from tap.ingest.chunker import Chunk, Turn
from tap.llm.schema import ANNOTATIONS, memories_schema, parse_memories

SAID = datetime(2026, 3, 9, 18, 30, tzinfo=UTC).timestamp()
CHUNK = Chunk(
    id="c",
    scope="s",
    conversation="x",
    source="proxy",
    turns=[Turn(id="t1", role="user", speaker="User", text="…", timestamp=SAID)],
    tokens=3,
)


def parsed(**fields: Any) -> Any:
    memory = {"content": "The user ran a half marathon.", "kind": "event", "importance": 3, "turn_ids": ["t1"]}
    (candidate,) = parse_memories({"memories": [memory | fields]}, CHUNK)
    return candidate


def test_annotations_become_the_candidates_slot_and_signals() -> None:
    candidate = parsed(
        kind="fact",
        holder="The User's Sister",
        attribute=" Residence ",
        part="",
        value="Ljubljana.",
        change="update",
        retracts=["old flat", "Leith"],
        goal_reached="Flat",
        new_value_of="",
    )
    assert (candidate.holder, candidate.slot, candidate.slot_value) == (
        "user:sister",
        "user:sister|residence",
        "ljubljana",
    )
    assert candidate.retracts == ["old", "flat", "leith"] and candidate.tags == ["update"]
    assert candidate.fulfils == "flat" and candidate.valid_from == SAID


def test_a_correction_keeps_the_wrong_value_as_written_and_a_death_its_two_parts() -> None:
    corrected = parsed(kind="fact", wrong_value="Marit", right_value="Maren")
    assert corrected.correction == ["Marit", "Maren"]
    died = parsed(died_name="Biscuit", died_relation="Tortoise")
    assert died.deceased == ["biscuit", "tortoise"]


def test_a_plain_event_is_dated_by_the_day_it_happened_anything_that_ends_something_when_said() -> None:
    assert parsed(happened_on="2026-03-08").valid_from == datetime(2026, 3, 8, tzinfo=UTC).timestamp()
    assert parsed(happened_on="2026-03-09").valid_from == SAID  # the same day: the turn's own time
    assert parsed(happened_on="2026-04-01").valid_from == SAID  # never after it was said
    moved = parsed(happened_on="2026-02-01", holder="user", attribute="residence", value="ljubljana")
    assert moved.valid_from == SAID  # a move told late is still newer than what was said before it
    assert parsed(kind="fact", happened_on="2026-03-01").valid_from == SAID


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"attribute": "residence", "holder": "user"}, "memories[0].value: attribute 'residence' needs its value"),
        ({"value": "ljubljana"}, "memories[0].attribute: value 'ljubljana' needs the attribute"),
        ({"part": "backend"}, "memories[0].attribute: part 'backend' needs the attribute"),
        ({"attribute": "residence", "value": "ljubljana"}, "memories[0].holder: attribute 'residence' needs whom"),
        ({"holder": "user|residence"}, "memories[0].holder: 'user|residence' must not contain '|'"),
        ({"wrong_value": "Marit"}, "memories[0].right_value: a correction needs both values"),
        ({"wrong_value": "Marit", "right_value": "marit"}, "'marit' is the value it corrects"),
        ({"happened_on": "08/03/2026"}, "memories[0].happened_on: '08/03/2026' is not a YYYY-MM-DD date"),
        ({"happened_on": "2026-02-30"}, "is not a date"),
        ({"change": "yes"}, "Invalid enum value 'yes' - at $.memories[0].change"),
        ({"retracts": "van"}, "Expected array, got str - at $.memories[0].retracts"),
        ({"holder": "x" * 81}, "at $.memories[0].holder"),
    ],
)
def test_annotations_that_do_not_fit_together_are_refused(fields: dict[str, Any], reason: str) -> None:
    with pytest.raises(ValueError) as caught:
        parsed(**fields)
    assert reason in str(caught.value)


def test_the_schema_requires_every_annotation_and_forbids_others() -> None:
    item = memories_schema(["t1"])["properties"]["memories"]["items"]
    assert set(ANNOTATIONS) <= set(item["required"]) == set(item["properties"])
    assert item["additionalProperties"] is False
