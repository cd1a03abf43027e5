"""What a language model's candidates need before and after reconcile, so they meet the same rules
as the offline extractor's.

- `conform`: a model's annotations (tap.llm.schema) in the form the rules write theirs, so reconcile
  compares them the same way: a named speaker's statements about themselves held by the speaker's
  name, as the rules hold them ("user" becomes "priya" when Priya said it), slot values with the
  rules' aliases folded ("PostgreSQL" is "postgres"), the words a slot is searched by (`context`),
  a reached goal's head noun folded ("flat" is "home"), a rescheduled thing's words singular, head
  noun last;
- `guarded`: a plan for a model's candidate kept inside the invariants, whichever side decided it
  (`[extract] reconcile = "rules"` or `"llm"`): a statement about someone never replaces, merges
  into, duplicates or contradicts one about another: the user's sister's news is not the user's,
  another team's choice is not the user's team's, Jonas's is not Priya's ("user" and "team" are
  one, as in reconcile; a holder may speak for their own people: the user's statement may end one
  about their daughter); and a statement older than its target does not replace it: it is written
  as the target's history. A correction ("it's Maren, not Marit") and a death are left as
  decided: they name what they end, whoever it was said of.

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
    """The plan without the targets whose holder the candidate cannot speak for, and an older
    statement written as history instead of replacing a newer one (see the module docstring)."""
    if plan.action not in _REPLACING or plan.target is None or candidate.correction or candidate.deceased:
        return plan  # a correction or a death names what it ends, whoever's statement said it
    also = [m for m in plan.also if _speaks_for(candidate.holder, m.holder)]
    if not _speaks_for(candidate.holder, plan.target.holder):
        if plan.action in ("supersede", "conflict") and also:  # another of the slot's values is the holder's
            return Plan(action=plan.action, target=also[0], content="", also=also[1:])
        return Plan(action="add")
    if plan.action in ("supersede", "update") and plan.target.valid_from > candidate.valid_from:
        return Plan(action="history", target=plan.target)
    return Plan(action=plan.action, target=plan.target, content=plan.content, also=also)


def _speaks_for(new: str, old: str) -> bool:
    """Whether a statement held by `new` may replace, merge into or duplicate one held by `old`:
    unknown on either side, the same holder, both the user's own ("user", "team"), a holder about
    their own people ("user" for "user:daughter", "priya" for "priya:sister"; never the reverse),
    or a relation and another's name (possibly one person: "user:sister" and "ana")."""
    if not new or not old or new == old or (new in _SELF and old in _SELF):
        return True
    _, old_related, _ = old.partition(":")
    new_root, new_related, _ = new.partition(":")
    if old_related and not new_related:
        return True  # the holder speaking of their own people, or another name for the same one
    if new_related and not old_related and old not in _SELF:
        return new_root != old  # "user:sister" and "ana" may be one person; "priya:sister" is not "priya"
    return False
