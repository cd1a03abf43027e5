"""Which stored statements a death retires: the present-tense ones about the one who died.

An extractor marks a statement that reports a death with `CandidateMemory.deceased` = [name, noun]
("Luna passed away" → ["luna", ""], "my dad died" → ["", "dad"], "my cat Luna died" → ["luna",
"cat"]; tap.rules.losses reads them offline). Reconcile then supersedes, by the death statement, the
older statements that describe the one who died as they are now: what they are, like, do or will
do ("the user's dad lives in Ohio", "Luna is 4 years old", "the user has a cat named Luna"). Never
the history: events stay ("Luna knocked the vase over", "the user's dad taught them to fish"), and
so does anything about someone else.

About the one who died means: held by them (the statement's holder, tap.rules.slots.statement_holder:
"luna", "user:dad", kin words folded: "father" is "dad"), or introducing them by name ("a cat named
Luna", "the user's dog Max"). A death known only by a bare name retires something only when the
store introduces that name as someone's pet or person: "Dumbledore died in book 6" leaves "the
user's favourite character is Dumbledore" alone.

Invariants: pure; superseding is non-destructive, so a wrong retirement is visible and reversible
(`tap memories` shows superseded versions).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tap.candidates import CandidateMemory
from tap.records import Memory

__all__ = ["KIN_AND_PETS", "PEOPLE", "PETS", "PRESENT_KINDS", "retired_by_death", "words_for_deceased"]

PRESENT_KINDS = frozenset({"fact", "preference", "plan"})
PEOPLE = frozenset(
    "mom mum mother dad father mama papa grandma grandmother grandpa grandfather granny gran nan nana nanna "
    "grandad granddad grandparent grandparents parent parents sister brother sibling wife husband partner spouse "
    "son daughter child baby aunt auntie uncle cousin niece nephew friend girlfriend boyfriend fiance fiancee "
    "stepmom stepdad stepmother stepfather mentor godfather godmother".split()
)
"""Words for the people someone has (kin, partners, friends)."""
PETS = frozenset(
    "dog cat puppy kitten pup pet hamster rabbit bunny parrot bird horse pony tortoise turtle ferret rat budgie "
    "cockatiel gecko lizard snake goldfish fish chicken hen".split()
)
"""Words for the animals someone has."""
KIN_AND_PETS = PEOPLE | PETS
_SAME_KIN = {
    "father": "dad",
    "papa": "dad",
    "mother": "mom",
    "mum": "mom",
    "mama": "mom",
    "grandmother": "grandma",
    "granny": "grandma",
    "gran": "grandma",
    "nan": "grandma",
    "nana": "grandma",
    "nanna": "grandma",
    "grandfather": "grandpa",
    "grandad": "grandpa",
    "granddad": "grandpa",
    "puppy": "dog",
    "pup": "dog",
    "kitten": "cat",
}
_INTRODUCER = r"(?:named|called|" + "|".join(sorted(KIN_AND_PETS, key=len, reverse=True)) + ")"


def words_for_deceased(deceased: Sequence[str]) -> list[str]:
    """The words a store is searched with for what is said of the one who died: the name, else the
    noun with every kin word that means the same ("dad": dad, father, papa); [] for no death."""
    name, noun = (list(deceased) + ["", ""])[:2]
    if not name and not noun:
        return []
    if name:
        return [name]
    same = _SAME_KIN.get(noun, noun)
    return [same, *(word for word, folded in _SAME_KIN.items() if folded == same)]


def retired_by_death(candidate: CandidateMemory, memories: Sequence[Memory]) -> list[Memory]:
    """The memories among `memories` that the death `candidate` reports retires (see the module
    docstring): older, present-tense, about the one who died, not from the candidate's own turns."""
    name, noun = (candidate.deceased + ["", ""])[:2]
    own = set(candidate.turn_ids)
    present = [
        m
        for m in memories
        if m.kind in PRESENT_KINDS and m.valid_from <= candidate.valid_from and not own & set(m.sources)
    ]
    kin = _kin(f"user:{noun}") if noun else ""
    if not name:
        return [m for m in present if _kin(m.holder) == kin]
    named = re.compile(rf"\b{re.escape(name)}\b", re.IGNORECASE)
    introducing = re.compile(rf"\b{_INTRODUCER}\s+{re.escape(name)}\b", re.IGNORECASE)
    introduced = {m.id for m in present if introducing.search(m.content)}
    if not introduced and not noun:
        return []  # a name the store never gave as someone's pet or person ("Dumbledore")
    return [
        m
        for m in present
        if m.holder == name or m.id in introduced or (kin and _kin(m.holder) == kin and named.search(m.content))
    ]


def _kin(holder: str) -> str:
    """A holder with its kin word folded ("user:father" → "user:dad")."""
    root, _, noun = holder.partition(":")
    return f"{root}:{_SAME_KIN.get(noun, noun)}" if noun else holder
