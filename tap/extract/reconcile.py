"""Reconcile: decide what each new candidate memory does to the store (add / update / supersede / noop).

Rules (no LLM; docs/architecture.md, Extraction), in this order, against the scope's active memories:
1. **correction** ("it's Dana, not Diana"): the newest memory naming the wrong value gets a new
   version with the right one (supersede); with nothing to correct, the candidate is dropped (it
   means nothing on its own);
2. **duplicate**: cosine ≥ `duplicate_similarity` with the nearest memory → noop: the existing
   memory gains the candidate's source turns and the higher importance. Three near-duplicates are
   not duplicates, as they embed next to what they change: a denial of the memory (rule 4: "I'm
   not allergic to cats"), a statement of the opposite polarity ("I'm lactose intolerant" after
   "I'm not lactose intolerant": it supersedes the memory), and another value of the same thing
   (another slot value or other numbers: "my rent is $1700 a month" goes on to rules 3-6);
3. **slot** (tap.language.rules.slots): memories filling the same single-valued slot ("user|residence",
   "team|database") are the statement's mates. Same value → noop (a restatement). Another value,
   older → supersede every such mate ("lives in Berlin" → "moved to Lisbon"); another value, newer
   (an old log ingested late) → the candidate is written as history, already superseded by the
   newer one; another value that cannot be told to replace the old one (stated at the same moment,
   or a second employer without a sign of change: tap.memories.conflicts.ambiguous_change) → conflict: both
   kept, marked, until the user settles it. A team-wide statement and one about a part of the
   work ("for the backend") are mates when the scope knows only one of them;
4. **retraction** ("I no longer eat meat", "I left Google", "switched from vim", "we're off
   heroku", "I'm not allergic to cats"): older memories of the same family of subjects holding
   every retracted word are superseded by the retraction (with a slot change, alongside the
   slot's old value); a death ("Luna passed away") supersedes what is said of the one who died as
   they are now (tap.language.death), a goal reached ("we bought a house") the goal (tap.language.goal), a new
   date or amount ("we moved the wedding to May") the old one (tap.language.new_value);
5. **change** ("instead", "used to … but now", "switched", "these days"; a weaker "now"): the most
   similar older statement about the same subject (same opening words: "the user", "the user's
   sister", "Atlas") at cosine ≥ CHANGE_SIMILARITY (NOW_SIMILARITY for "now") is superseded;
6. **same subject** (the older rule, for statements without a slot): cosine ≥ `supersede_similarity`,
   same kind (not an event or an episode: those accumulate), same first word, at most a few words
   changed, not older → supersede;
7. otherwise → add.
With an LLM provider (tap.llm.contract.LLMProvider) the same decisions come from one batched call per
chunk, shown the slot mates as well as the nearest memories; `plan_from_decision` turns its answer
into a Plan. Nothing is ever deleted: a superseded memory stays, marked, and is never recalled.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import msgspec

from tap.candidates import CandidateMemory
from tap.config import ExtractConfig
from tap.errors import ProviderError
from tap.language.death import retired_by_death
from tap.language.goal import GOAL_KINDS, goal_object
from tap.language.new_value import VALUE_KINDS, states_a_value
from tap.language.statements import (
    kin_named,
    names,
    negated,
    polarity_free_words,
    same_possession,
    shares_a_word,
    subject_family,
    subject_key,
    value_changed,
    version_after,
)
from tap.language.statements import words as statement_words
from tap.memories.conflicts import ambiguous_change
from tap.records import Hit, Kind, Memory

Action = str
NON_SUPERSEDING = ("event", "episode")
MAX_CHANGED_WORDS = 2
CHANGE_SIMILARITY = 0.45  # measured: updates 0.46-0.74 to what they update, unrelated statements 0.17-0.29
NOW_SIMILARITY = 0.55
VALUE_CHANGE_SIMILARITY = 0.3  # another weekday, amount or time, with a word in common


class Plan(msgspec.Struct, kw_only=True):
    """What to do with one candidate: the action, the memory it concerns, and any others it retires.

    `action` is add | noop | update | supersede | history | conflict | drop; `history` writes the
    candidate already superseded by `target` (a newer statement of the same slot); `conflict`
    writes it beside `target` (and `also`), each marked as contradicting the other, when tap cannot
    tell which is current (tap.memories.conflicts); `drop` writes nothing.
    """

    action: Action
    target: Memory | None = None
    content: str = ""
    also: list[Memory] = msgspec.field(default_factory=list)


class Evidence(msgspec.Struct, kw_only=True):
    """What the store says about one candidate: nearest memories, slot mates, retracted, ended and
    corrected memories (each list: active, non-episode, same scope)."""

    similar: list[Hit] = msgspec.field(default_factory=list)
    mates: list[Memory] = msgspec.field(default_factory=list)
    retracted: list[Memory] = msgspec.field(default_factory=list)
    ended: list[Memory] = msgspec.field(default_factory=list)
    """Memories that name whom a death or what a reached goal is about (tap.language.death, tap.language.goal)."""
    corrected: Memory | None = None
    conversation: str = ""
    """The conversation the candidate was said in ('' unknown): its earlier turns were extracted first."""


def same_subject(a: str, b: str) -> bool:
    """Crude subject match: same first word, at least half of the words shared, few words changed."""
    wa, wb = statement_words(a), statement_words(b)
    if not wa or not wb or wa[0] != wb[0]:
        return False
    sa, sb = set(wa), set(wb)
    shorter = max(1, min(len(sa), len(sb)))
    changed = max(len(sa - sb), len(sb - sa))
    return len(sa & sb) / shorter >= 0.5 and changed <= max(MAX_CHANGED_WORDS, shorter // 4)


def holds_words(content: str, words: Sequence[str]) -> bool:
    """Whether every word is in the content (as a word or a word's start: 'eat' in 'eats')."""
    have = statement_words(content)
    return bool(words) and all(any(_word_matches(h, w.lower()) for h in have) for w in words)


def _word_matches(have: str, word: str) -> bool:
    """'eat' matches 'eats', 'vim' matches 'vimrc'; a two-letter name ('pi', 'go') only itself."""
    return have == word or (len(word) >= 3 and have.startswith(word))


def corrected_content(content: str, wrong: str, right: str) -> str:
    """The content with the wrong value replaced by the right one (whole words only)."""
    return re.sub(rf"\b{re.escape(wrong)}\b", right, content)


def slot_mates(candidate: CandidateMemory, family: Sequence[Memory]) -> list[Memory]:
    """The memories of the slot's family that state the same thing as the candidate does: those
    about the same part; else, when the scope knows exactly one part (or only the whole), those."""
    same = [m for m in family if m.slot_part == candidate.slot_part]
    if same:
        return same
    parts = {m.slot_part for m in family}
    if len(parts) == 1 and (not candidate.slot_part or parts == {""}):
        return list(family)
    return []


def decide(candidate: CandidateMemory, evidence: Evidence, cfg: ExtractConfig) -> Plan:
    """The rules decision for one candidate (see the module docstring)."""
    if candidate.correction:
        if evidence.corrected is None:
            return Plan(action="drop")
        wrong, right = candidate.correction[0], candidate.correction[1]
        return Plan(
            action="supersede",
            target=evidence.corrected,
            content=corrected_content(evidence.corrected.content, wrong, right),
        )
    similar = evidence.similar
    older = _retracted_before(candidate, evidence.retracted)
    older += [m for m in _ended_before(candidate, evidence.ended) if m not in older]
    taken_back = {m.id for m in older}
    # "I'm not allergic to cats" embeds next to "the user is allergic to cats": what a statement
    # takes back is never its duplicate
    if similar and similar[0].score >= cfg.duplicate_similarity and similar[0].memory.id not in taken_back:
        nearest = similar[0].memory
        if _says_the_opposite(candidate, nearest):  # "I'm lactose intolerant" after "I'm not lactose intolerant"
            return Plan(action="supersede", target=nearest)
        if not _other_value(candidate, nearest):  # else an update ("rent is $1700"): the rules below
            return Plan(action="noop", target=nearest)
    if candidate.slot:
        plan = _slot_plan(candidate, evidence.mates, evidence.conversation)
        if plan is not None:
            if plan.action == "supersede" and plan.target is not None:  # "from vim to helix": the vimrc too
                taken = {plan.target.id, *(m.id for m in plan.also)}
                plan.also.extend(m for m in older if m.id not in taken)
            return plan
    if older:
        newest = max(older, key=lambda m: (m.valid_from, m.created_at))
        return Plan(action="supersede", target=newest, also=[m for m in older if m.id != newest.id])
    changed = _changed_plan(candidate, similar)
    return changed if changed is not None else _same_subject_plan(candidate, similar, cfg)


def _says_the_opposite(candidate: CandidateMemory, nearest: Memory) -> bool:
    """Whether a candidate says the opposite of its near-duplicate, an older statement of the same
    person: one of the two is negated and, negation words aside, they differ by a word or two."""
    if negated(candidate.content) == negated(nearest.content):
        return False
    if nearest.kind in NON_SUPERSEDING or nearest.valid_from > candidate.valid_from:
        return False
    if set(candidate.turn_ids) & set(nearest.sources):
        return False
    if holder_family(candidate.holder, candidate.content) != holder_family(nearest.holder, nearest.content):
        return False
    return _few_words_apart(polarity_free_words(candidate.content), polarity_free_words(nearest.content))


def _few_words_apart(a: set[str], b: set[str]) -> bool:
    """Whether two statements' words differ by at most MAX_CHANGED_WORDS each way."""
    return len(a - b) <= MAX_CHANGED_WORDS and len(b - a) <= MAX_CHANGED_WORDS


_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_ANNOTATION = re.compile(r"\s*\([^()]*\)")


def _other_value(candidate: CandidateMemory, nearest: Memory) -> bool:
    """Whether a near-duplicate gives another value than the stored statement: another value of the
    same slot, or other numbers in otherwise the same words, a word or two aside ("rent is $1700 a
    month" after "$1500 a month": the two embed as one statement). The dates tap adds in brackets
    do not count: a restatement on another day is still one."""
    if candidate.slot and candidate.slot == nearest.slot and candidate.slot_value and nearest.slot_value:
        return candidate.slot_value != nearest.slot_value
    new_text, old_text = _ANNOTATION.sub("", candidate.content), _ANNOTATION.sub("", nearest.content)
    now, before = _NUMBER.findall(new_text), _NUMBER.findall(old_text)
    if not now or not before or sorted(now) == sorted(before):
        return False
    # the same statement with another number, not another statement that has numbers too
    return _few_words_apart(
        {w for w in statement_words(new_text) if not w[:1].isdigit()},
        {w for w in statement_words(old_text) if not w[:1].isdigit()},
    )


def _retracted_before(
    candidate: CandidateMemory, retracted: Sequence[Memory], *, family: str | None = None
) -> list[Memory]:
    """The retracted memories a statement takes back: older, about the same family of subjects (the
    user and their team are one; "Lucas" is another; `family` when given), and not from the
    statement's own turns."""
    family = family or holder_family(candidate.holder, candidate.content)
    own = set(candidate.turn_ids)
    return [
        m
        for m in retracted
        if m.valid_from <= candidate.valid_from
        and (holder_family(m.holder, m.content) == family or kin_named(m.content, family))
        and not own & set(m.sources)
    ]


def _another_of_its_kind(thing: Sequence[str], content: str) -> bool:
    """Whether a statement names another thing of the same kind than `thing` (tap.language.new_value' words,
    head noun last): its head noun without the words that tell it apart ("the team meeting" for "client
    meeting"). A statement without the head noun may still say the same thing otherwise ("charges 80
    euros an hour for review work" for "review rate"): the similarity rules judge it."""
    return len(thing) > 1 and holds_words(content, thing[-1:]) and not holds_words(content, thing)


def _ended_before(candidate: CandidateMemory, ended: Sequence[Memory]) -> list[Memory]:
    """What a death, a reached goal or a new value ends: what is said of the one who died as they
    are now (tap.language.death), the older goals of the same person that the goal reached (tap.language.goal), the
    older statements of the same person giving the thing's old date or amount (tap.language.new_value)."""
    if candidate.deceased:
        return retired_by_death(candidate, ended)
    if not (candidate.fulfils or candidate.new_value):
        return []
    older = _retracted_before(candidate, ended)  # older, the same person's, not its own turns
    reached = [m for m in older if m.kind in GOAL_KINDS and goal_object(m.content) == candidate.fulfils]
    retired = reached if candidate.fulfils else []
    if candidate.new_value:
        thing = candidate.new_value.split()
        if holder_family(candidate.holder, candidate.content) in thing:  # "standup moved to 10am": the user's
            older = _retracted_before(candidate, ended, family="self")
        retired += [
            m
            for m in older
            if m.kind in VALUE_KINDS
            and m not in retired
            and holds_words(m.content, thing)  # "my client meeting" is not "the team meeting"
            and states_a_value(m.content)
        ]
    return retired


def _other_version(candidate: CandidateMemory, mate: Memory) -> bool:
    """Whether a statement gives another version of the same tool than its slot mate ("bumped Node
    to 20" after "we're on Node 18"): an update, not a duplicate."""
    new, old = version_after(candidate.content, candidate.slot_value), version_after(mate.content, mate.slot_value)
    return bool(new and old and new != old)


def holder_family(holder: str, content: str) -> str:
    """Whose statement it is, as retractions compare them: 'self' for the user, their people,
    things and team; otherwise the person's name. From the extractor's `holder` when it recorded
    one, else read off the content (subject_family)."""
    if not holder:
        return subject_family(content)
    root = holder.split(":", 1)[0]
    return "self" if root in ("user", "team") else root


def _changed_plan(candidate: CandidateMemory, similar: Sequence[Hit]) -> Plan | None:
    """A statement that says something changed ("instead", "used to … but now", "moved the blog to
    Astro") supersedes the most similar older statement about the same subject."""
    cue = "update" if "update" in candidate.tags else "now" if "now" in candidate.tags else ""
    if not cue:
        return None
    floor = CHANGE_SIMILARITY if cue == "update" else NOW_SIMILARITY
    subject = subject_key(candidate.content)
    named = names(candidate.content)
    own = set(candidate.turn_ids)
    for hit in similar:
        old = hit.memory
        if hit.score < VALUE_CHANGE_SIMILARITY:
            break
        if old.kind in NON_SUPERSEDING or old.valid_from > candidate.valid_from or old.kind == "instruction":
            continue
        if own & set(old.sources):
            continue  # two statements of one turn: neither updates the other
        if _another_of_its_kind(candidate.new_value.split(), old.content):
            continue  # it names what it changes (tap.language.new_value): "my client meeting", not "the team meeting"
        same_family = holder_family(candidate.holder, candidate.content) == holder_family(old.holder, old.content)
        if hit.score >= floor:
            linked = subject_key(old.content) == subject or (
                same_family
                and (
                    bool(named & names(old.content))
                    or value_changed(candidate.content, old.content)
                    or same_possession(candidate.content, old.content)
                )
            )
        else:  # less alike: another value of the same kind, and a word of what it is about in common
            linked = same_family and (
                (value_changed(candidate.content, old.content) and shares_a_word(candidate.content, old.content))
                or (cue == "update" and same_possession(candidate.content, old.content, whole=True))
            )
        if linked:
            return Plan(action="supersede", target=old)
    return None


def _slot_plan(candidate: CandidateMemory, mates: Sequence[Memory], conversation: str) -> Plan | None:
    if not mates:
        return None
    same_value = [m for m in mates if m.slot_value == candidate.slot_value and not _other_version(candidate, m)]
    if same_value:
        return Plan(action="noop", target=max(same_value, key=lambda m: m.valid_from))
    newer = [m for m in mates if m.valid_from > candidate.valid_from]
    if newer:
        return Plan(action="history", target=min(newer, key=lambda m: m.valid_from))
    newest = max(mates, key=lambda m: (m.valid_from, m.created_at))
    others = [m for m in mates if m.id != newest.id]
    if ambiguous_change(candidate, newest, conversation):  # two employers, or two values stated together: ask
        return Plan(action="conflict", target=newest, also=others)
    return Plan(action="supersede", target=newest, also=others)


def _same_subject_plan(candidate: CandidateMemory, similar: Sequence[Hit], cfg: ExtractConfig) -> Plan:
    if not similar:
        return Plan(action="add")
    best = similar[0]
    old = best.memory
    if (
        best.score >= cfg.supersede_similarity
        and candidate.kind == old.kind
        and candidate.kind not in NON_SUPERSEDING
        and not old.slot
        and candidate.valid_from >= old.valid_from
        and same_subject(candidate.content, old.content)
    ):
        return Plan(action="supersede", target=old, content=candidate.content)
    return Plan(action="add")


def decide_by_rules(content: str, kind: Kind, valid_from: float, similar: Sequence[Hit], cfg: ExtractConfig) -> Plan:
    """The rules decision for a plain statement given its nearest active memories (best first)."""
    candidate = CandidateMemory(content=content, kind=kind, importance=3, tags=[], turn_ids=[], valid_from=valid_from)
    return decide(candidate, Evidence(similar=list(similar)), cfg)


def plan_from_decision(action: str, target_id: str, content: str, similar: Sequence[Memory]) -> Plan:
    """Turn an LLM decision into a Plan, refusing targets the model was not shown."""
    if action == "add":
        return Plan(action="add")
    by_id = {m.id: m for m in similar}
    if target_id not in by_id:
        raise ProviderError(f"reconcile chose unknown memory id {target_id!r} for {action}", retryable=True)
    return Plan(action=action, target=by_id[target_id], content=content)
