"""One person, two holders: "my sister Ana lives in Madrid" and, later, "Ana moved to Paris".

tap.language.rules.slots names the holder of a statement from the sentence alone: the first is about
"user:sister", the second about "ana", so the two residence statements fill different slots and the
move would leave Madrid current. When a statement's slot has no active mate, `aliased_mates` looks
for the same attribute under the person's other holder, linked by a stored statement that names
them together ("sister Ana", "wife Clara"):

- a named holder ("ana|residence"): active statements of a relative or pet of the speaker
  ("user:sister|residence") whose text names Ana right after the noun;
- a relative or pet that the statement names ("the user's sister Ana moved …", slot
  "user:sister|residence"): the active statements of "ana|residence".

Only the words of the stored statements link the two, so a name the scope never tied to a relation
links nothing.
"""

from __future__ import annotations

import re

from tap.candidates import CandidateMemory
from tap.ports import ExtractionStore
from tap.records import Memory

ALIAS_LOOKUP_K = 50
_NAME = r"[A-Z][a-z][\w'’-]*"


def aliased_mates(store: ExtractionStore, scope: str, candidate: CandidateMemory) -> list[Memory]:
    """Active, non-episode memories of the candidate's attribute under the other holder of the same
    person (see the module docstring); [] when there is none."""
    holder, _, attribute = candidate.slot.rpartition("|")
    if not holder or not attribute:
        return []
    if ":" in holder:
        noun = holder.split(":", 1)[1]
        named = re.search(rf"\b{re.escape(noun)}\s+({_NAME})", candidate.content)
        if named is None:
            return []
        slot = f"{named.group(1).lower()}|{attribute}"
        return [m for m in store.active_in_slot(scope=scope, slot=slot) if m.kind != "episode"]
    if holder == "team" or not re.fullmatch(r"[a-z][\w'’-]*", holder):
        return []
    name = holder.capitalize()
    [hits] = store.search_text([name], scope=scope, k=ALIAS_LOOKUP_K)
    return [
        h.memory
        for h in hits
        if h.memory.active
        and h.memory.kind != "episode"
        and _relation_of(h.memory.slot, attribute)
        and re.search(rf"\b{re.escape(_relation_noun(h.memory.slot))}\s+{re.escape(name)}\b", h.memory.content)
    ]


def _relation_of(slot: str, attribute: str) -> bool:
    """Whether a stored slot is `attribute` of someone's relative or pet ("user:sister|residence")."""
    holder, _, stored = slot.rpartition("|")
    return stored == attribute and ":" in holder


def _relation_noun(slot: str) -> str:
    return slot.rpartition("|")[0].split(":", 1)[1]
