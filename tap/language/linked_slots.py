"""Slots that answer for each other: someone single has no partner, someone dating is not single.

A relationship status ("user|relationship": single, married, …) and the partner role
("user:partner|name": who it is, tap.language.rules.slots) are two slots, so "I'm single now" would leave
"the user is dating Alex" current, and "I'm dating Alex" would leave "the user is single". When a
statement fills one of them, `linked_mates` gives the active statements of the other that it
contradicts, which reconcile then treats as the slot's older values (superseded by it, or it is
written as their history when they are newer):

- a status without a partner (single, divorced, separated, widowed) → the partner role's named
  values (not its empty value, `NO_PARTNER`, which a break-up wrote: that is no contradiction);
- a partner named → the statuses without a partner.

"I'm married now" says nothing about who the partner is, so it links nothing.
"""

from __future__ import annotations

from tap.candidates import NO_PARTNER, CandidateMemory
from tap.ports import SlotLookup
from tap.records import Memory

__all__ = ["linked_mates"]
_WITHOUT_PARTNER = frozenset({"single", "divorced", "separated", "widowed"})


def linked_mates(store: SlotLookup, scope: str, candidate: CandidateMemory) -> list[Memory]:
    """Active, non-episode statements of the linked slot that the candidate contradicts (see the
    module docstring); [] for any other slot."""
    holder, _, attribute = candidate.slot.rpartition("|")
    if attribute == "relationship" and candidate.slot_value in _WITHOUT_PARTNER:
        partners = store.active_in_slot(scope=scope, slot=f"{holder}:partner|name")
        return [m for m in partners if m.kind != "episode" and m.slot_value != NO_PARTNER]
    if attribute == "name" and holder.endswith(":partner") and candidate.slot_value != NO_PARTNER:
        statuses = store.active_in_slot(scope=scope, slot=f"{holder.removesuffix(':partner')}|relationship")
        return [m for m in statuses if m.kind != "episode" and m.slot_value in _WITHOUT_PARTNER]
    return []
