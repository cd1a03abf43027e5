"""What a language model's candidates need before and after reconcile, so they meet the same rules
as the offline extractor's.

- `conform`: a model's annotations (tap.llm.schema) in the form the rules write theirs, so reconcile
  compares them the same way: a named speaker's statements about themselves held by the speaker's
  name, as the rules hold them ("user" becomes "priya" when Priya said it), slot values with the
  rules' aliases folded ("PostgreSQL" is "postgres"), the words a slot is searched by (`context`),
  a reached goal's head noun folded ("flat" is "home"), a rescheduled thing's words singular, head
  noun last;
- `guarded`: a plan for a model's candidate kept inside the invariants, whichever side decided it
  (`[extract] reconcile = "rules"` or `"llm"`): a statement about one holder never replaces, merges
  into, duplicates or contradicts one about another (the user's sister is not the user; the design
  team is not the user's team; "user" and "team" are one, as in reconcile), and a statement older
  than its target does not replace it: it is written as the target's history. A correction ("it's
  Maren, not Marit") is left as decided: it names the value it corrects, whoever it was said of.

Invariants: pure; a guarded plan only ever loses targets (never gains one), so a model's decision
cannot reach a memory reconcile did not show it, and nothing is deleted either way.
"""

from __future__ import annotations

import msgspec

from tap.candidates import CandidateMemory
from tap.extract.reconcile import Plan
from tap.ingest.chunker import Chunk
from tap.language.goal import head_noun, noun_words
from tap.language.rules.slots import normalise_value, slot_words

__all__ = ["conform", "guarded"]

_SELF = frozenset({"user", "team"})
_REPLACING = frozenset({"supersede", "update", "noop", "history", "conflict"})


def conform(candidate: CandidateMemory, chunk: Chunk) -> CandidateMemory:
    """The model's candidate with its annotations normalised as the rules normalise theirs."""
    holder = _speaker_holder(candidate, chunk)
    attribute = candidate.slot.rpartition("|")[2]
    slot = f"{holder}|{attribute}" if attribute else ""
    value = normalise_value(candidate.slot_value) if candidate.slot_value else ""
    thing = noun_words(candidate.new_value, modifiers=2) if candidate.new_value else []
    return msgspec.structs.replace(
        candidate,
        holder=holder,
        slot=slot,
        slot_value=value,
        context=slot_words(slot),
        fulfils=head_noun(candidate.fulfils) if candidate.fulfils else "",
        new_value=" ".join(thing),
    )


_UNNAMED = frozenset({"user", "assistant"})


def _speaker_holder(candidate: CandidateMemory, chunk: Chunk) -> str:
    """The holder, with "user" (and "user:<relation>") read as the speaker's name when every cited
    turn is one named speaker's: the rules hold "I live in Ljubljana", said by Priya, as "priya"."""
    root, colon, relation = candidate.holder.partition(":")
    if root != "user":
        return candidate.holder
    cited = set(candidate.turn_ids)
    speakers = {turn.speaker.strip() for turn in chunk.turns if turn.id in cited}
    if len(speakers) != 1:
        return candidate.holder
    name = speakers.pop().lower()
    return candidate.holder if not name or name in _UNNAMED else f"{name}{colon}{relation}"


def guarded(candidate: CandidateMemory, plan: Plan) -> Plan:
    """The plan without the targets that belong to another holder, and an older statement written
    as history instead of replacing a newer one (see the module docstring)."""
    if plan.action not in _REPLACING or plan.target is None or candidate.correction:
        return plan  # a correction names the value it corrects, whoever's statement said it
    also = [m for m in plan.also if _same_holder(candidate.holder, m.holder)]
    if not _same_holder(candidate.holder, plan.target.holder):
        if plan.action in ("supersede", "conflict") and also:  # another of the slot's values is the user's
            return Plan(action=plan.action, target=also[0], content="", also=also[1:])
        return Plan(action="add")
    if plan.action in ("supersede", "update") and plan.target.valid_from > candidate.valid_from:
        return Plan(action="history", target=plan.target)
    return Plan(action=plan.action, target=plan.target, content=plan.content, also=also)


def _same_holder(new: str, old: str) -> bool:
    """Whether two holders may be the same one: unknown on either side, equal, both the user's own
    ("user", "team"), or a relation and another's name (possibly one person: "user:sister" and "ana")."""
    if not new or not old or new == old:
        return True
    if new in _SELF and old in _SELF:
        return True
    named = [h for h in (new, old) if ":" not in h and h not in _SELF]
    related = [h for h in (new, old) if ":" in h]
    if len(named) == 1 and len(related) == 1:  # "user:sister" and "ana"; never "priya:sister" and "priya"
        return related[0].partition(":")[0] != named[0]
    return False
