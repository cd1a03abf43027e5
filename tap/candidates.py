"""What an extractor proposes, before reconcile gives it an id and a scope: `CandidateMemory`, and
what every extractor (the offline rules in tap.language.rules, the LLM providers in store.llm) does to its
candidates before reconcile (`merge_duplicates`).

Both sides import it from here: neither the rules nor the providers depend on the other.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from tap.records import Kind

__all__ = ["NO_PARTNER", "CandidateMemory", "merge_duplicates"]

NO_PARTNER = "no one"
"""The partner role's value when it is empty ("Alex and I broke up": tap.language.rules.slots and
tap.language.linked_slots)."""


class CandidateMemory(msgspec.Struct, frozen=True, kw_only=True):
    """A memory proposed by an extractor, before reconcile gives it an id and a scope.

    `slot` / `slot_part` / `slot_value`: the single-valued attribute it states ("user|residence",
    "", "lisbon"; "team|database", "backend", "postgres"), so reconcile can supersede the statement
    it updates; `retracts`: words of what it takes back
    ("no longer eat meat" → ["eat", "meat"]); `correction`: [wrong, right] for "it's Dana, not Diana";
    `holder`: whom it is about (tap.language.rules.slots.statement_holder: "user", "team", "user:sister",
    "lucas"; "" when the extractor does not say); `deceased`: [name, noun] of the one whose death it
    reports ("Luna passed away" → ["luna", ""], "my dad died" → ["", "dad"]; tap.language.death); `fulfils`:
    the head noun of the goal it reports reached ("we bought a house" → "home"; tap.language.goal);
    `new_value`: the words of a thing it moves to another date, sets to another amount or calls off,
    head noun last ("we moved the wedding to May" → "wedding", "my dentist appointment got pushed"
    → "dentist appointment"; tap.language.new_value). `tentative`: a statement the extractor's own
    rules would not keep; the pipeline keeps it only when the keep probe (tap.language.probes), which
    reads its meaning rather than its wording, says it is worth a memory.
    """

    content: str
    kind: Kind
    importance: int
    tags: list[str]
    turn_ids: list[str]
    valid_from: float
    slot: str = ""
    slot_part: str = ""
    slot_value: str = ""
    retracts: list[str] = msgspec.field(default_factory=list)
    correction: list[str] = msgspec.field(default_factory=list)
    context: str = ""
    holder: str = ""
    deceased: list[str] = msgspec.field(default_factory=list)
    fulfils: str = ""
    new_value: str = ""
    tentative: bool = False


def merge_duplicates(memories: Sequence[CandidateMemory]) -> list[CandidateMemory]:
    """One memory per content (case-insensitive): turn ids united, highest importance kept."""
    merged: dict[str, CandidateMemory] = {}
    for memory in memories:
        key = memory.content.lower()
        seen = merged.get(key)
        if seen is None:
            merged[key] = memory
            continue
        ids = seen.turn_ids + [tid for tid in memory.turn_ids if tid not in seen.turn_ids]
        top = max(seen.importance, memory.importance)
        sure = seen.tentative and memory.tentative  # one firm reading makes the statement firm
        merged[key] = msgspec.structs.replace(seen, turn_ids=ids, importance=top, tentative=sure)
    return list(merged.values())
