"""The offline rule-based extractor: statements a careful person would keep, without any model.

`RulesExtractor.extract(chunk)` reads each person's turns sentence by sentence (tap.rules.text),
keeps the sentences worth keeping (tap.rules.keep) and writes each as one self-contained,
third-person, dated statement (tap.rules.person, tap.rules.dates) with its kind and importance
(tap.rules.classify), the slot it fills and what it retracts (tap.rules.slots), citing the turn it
came from: "I moved to Lisbon last month" → "The user moved to Lisbon (around April 2026)".

- An unnamed assistant (speaker "Assistant") contributes no statements: what it says is advice and
  general knowledge, and its offers and acknowledgements are filler. What it said stays findable in
  the excerpt layer (tap.rules.excerpts). Named speakers are people: their statements are kept
  under their names.
- A brief answer to the other speaker's question about the person keeps the question
  ('Asked "Have you been to Porto?", Caroline said: Yes, twice'), citing both turns; answers to
  offers ("Would you like me to draft it?" → "Yes please") are not kept.
- A shared photo becomes its own statement ("Caroline shared a photo: a sunset over the lake").
- Provenance is narrow: the sentence's turn (and the question's, for a brief answer); never a chunk.

Invariants: pure and deterministic (same chunk, same memories, same order); every memory cites at
least one turn of the chunk; contents are unique within one extraction (duplicates merge their
turn ids).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import msgspec

from tap.candidates import CandidateMemory, merge_duplicates
from tap.chunker import Chunk, Turn
from tap.rules.classify import classify, importance
from tap.rules.dates import resolve_dates, tidy
from tap.rules.keep import is_filler, is_fragment, is_instruction, judge
from tap.rules.person import (
    COMMON_VERBS,
    capitalise,
    is_work_talk,
    name_listener,
    rewrite_first_person,
    rewrite_we,
    subject_for,
)
from tap.rules.slots import read_slot, slot_words, statement_holder
from tap.rules.text import (
    clauses,
    content_words,
    normalise_chat,
    restore_subject,
    split_sentences,
    statement_part,
    strip_lead,
)

__all__ = ["RulesExtractor", "finish"]

UNNAMED_ASSISTANT = "Assistant"
_PHOTO = re.compile(
    r"\[\s*(?:shares?|shared|sends?|sent|posts?|posted)\s+(?:an?\s+)?(?:photo|picture|image|pic)"
    r"(?:\s+of)?\s*:?\s*(?P<caption>[^\]]+)\]",
    re.IGNORECASE,
)
_ELLIPTICAL = re.compile(
    r"^(?:yes|yeah|yep|yup|no|nope|definitely|probably|maybe|sure|not really|never|twice|once)\b", re.I
)
_OFFER = re.compile(
    r"\b(?:would you like|do you want|shall I|should I|want me to|need (?:any|more)|anything else|can I help"
    r"|is there anything|how can I|may I|could I|let me know|happy to help|does that help|make sense|sound good"
    r"|ready to|shall we|should we)\b",
    re.IGNORECASE,
)
_ABOUT_LISTENER = re.compile(r"\b(?:you|your|yours|you're|you’re|you've|you’ve)\b", re.IGNORECASE)
_INSTRUCTION_LEAD = re.compile(r"^(?:please\s+)", re.IGNORECASE)


class _TurnContext(msgspec.Struct, frozen=True, kw_only=True):
    """What a turn's extraction needs to know about its neighbours."""

    turn: Turn
    question: Turn | None  # the previous turn, when it is the other speaker's question about this one
    names: tuple[str, ...]
    listener: str  # whom "you" means: the other speaker's name, or "the assistant"


def finish(body: str, dates: Sequence[str]) -> str:
    """Trim trailing punctuation and append the resolved dates in parentheses."""
    body = re.sub(r"[\s.!…,;:~-]+$", "", body)
    return f"{body} ({'; '.join(dates)})" if dates else body


class RulesExtractor:
    """Sentence-level, pattern-based extraction: the offline default extractor."""

    def extract(self, chunk: Chunk) -> list[CandidateMemory]:
        """Candidate memories from every person's turn of the chunk, in turn order, without duplicates."""
        names = _speaker_names(chunk.turns)
        found: list[CandidateMemory] = []
        for index, turn in enumerate(chunk.turns):
            if turn.speaker == UNNAMED_ASSISTANT:
                continue
            context = _TurnContext(
                turn=turn,
                question=_question_turn(chunk.turns, index),
                names=names,
                listener=_listener(chunk.turns, index),
            )
            found += self.from_turn(context)
        return merge_duplicates(found)

    def from_turn(self, context: _TurnContext) -> list[CandidateMemory]:
        """Memories from one turn: shared photos, then its statements."""
        text, found = _take_photos(context.turn)
        question = context.question
        for sentence in split_sentences(normalise_chat(text)):
            statements = _statements(strip_lead(sentence, context.names), context.names)
            clean = ", ".join(statements)
            if question is not None and _answers_briefly(sentence, clean):
                answer = sentence if _ELLIPTICAL.match(sentence) else strip_lead(sentence, ())
                found.append(_answer_memory(answer, context.turn, question))
            else:
                for statement in statements:
                    memory = self.from_sentence(statement, context.turn, context.listener)
                    if memory is not None:
                        found.append(memory)
            if clean:
                question = None  # only the first sentence past the greetings answers the question
        return found

    def from_sentence(self, clean: str, turn: Turn, listener: str = "the assistant") -> CandidateMemory | None:
        """One memory from one lead-stripped sentence, or None when it is not worth keeping."""
        statement = _kept_part(statement_part(clean))
        if not statement:
            return None
        instruction = is_instruction(statement)
        reading = read_slot(statement, turn.speaker, work=is_work_talk(statement))
        slot = reading.slot
        kind = classify(statement, instruction=instruction, slot=slot)
        body, dates = resolve_dates(statement, turn.timestamp)
        subject = subject_for(turn.speaker)
        content = _render(body, subject, instruction, listener)
        third_party = not re.search(r"\b(?:I|my|me|we|our|us)\b", statement, re.IGNORECASE)
        return CandidateMemory(
            content=finish(content, dates),
            kind=kind,
            importance=importance(kind, slot=slot, dated=bool(dates), third_party=third_party and not instruction),
            tags=[t for t in (kind, slot.split("|")[-1] if slot else "", reading.change) if t],
            turn_ids=[turn.id],
            valid_from=turn.timestamp,
            slot=slot,
            slot_part=reading.part,
            slot_value=reading.value,
            retracts=list(reading.retracts),
            correction=list(reading.correction),
            context=slot_words(slot),
            holder=statement_holder(statement, turn.speaker, work=is_work_talk(statement)),
        )


_OWN_SUBJECT = re.compile(
    r"^(?:(?:and|but|so|plus|also)\s+)?(?:I|I'm|I’m|I've|I’ve|I'd|I'll|we|we're|we’re|we've|my|our"
    r"|[A-Z][\w’'-]+\s+(?:is|was|has"
    r"|runs|uses|stays|moved|started|works|lives|[a-z]+(?:s|ed)))\b"
)


# A reason clause cut from its main clause states what the speaker takes as given: "Since I've
# been thinking about my trip to Paris, I was wondering…" → "I've been thinking about my trip to
# Paris"; "As I'm vegetarian now, can you…" → "I'm vegetarian now" ("as I said" is no premise).
_PREMISE = re.compile(
    r"^(?:since|because|as|now that|given that|seeing as)\s+"
    r"(?=(?:I|I'm|I’m|I've|I’ve|I'd|I’d|we|we're|we’re|we've|we’ve|my|our)\b)"
    r"(?!I\s+(?:said|say|mentioned|mention|noted|told|explained|wrote)\b)",
    re.IGNORECASE,
)


def _statements(sentence: str, names: Sequence[str]) -> list[str]:
    """The sentence's statements: its clauses without questions and requests, a clause with a
    subject of its own starting a new statement ("Atlas is a django app on sqlite, Beacon is a node
    scraper" → two), others staying with the one before ("I'm a frontend dev, fully remote");
    dropped subjects restored."""
    if not sentence:
        return []
    groups: list[list[str]] = []
    for clause in clauses(sentence):
        if clause != sentence.strip():  # cut from a longer sentence: a reason clause is the user's premise
            clause = _PREMISE.sub("", clause)
        if groups and not _OWN_SUBJECT.match(clause):
            groups[-1].append(clause)
        else:
            groups.append([clause])
    stripped = (strip_lead(", ".join(g), names) for g in groups)
    # filler is judged before a dropped "I" is restored: "have fun, …" is not "I have fun, …"
    statements = [s for s in (restore_subject(g) for g in stripped if not is_filler(g)) if s]
    return [part for statement in statements for part in _split_compound(statement)]


_COMPOUND = re.compile(
    rf"^(?P<subject>I|we)\b(?P<first>[^,;]{{4,}}?)\s+and\s+"
    rf"(?P<second>(?:(?:also|just|recently|finally|now|then)\s+)?(?:(?P<common>{COMMON_VERBS})|[a-z]{{3,}}ed)\b.*)$",
    re.IGNORECASE,
)


def _split_compound(statement: str) -> list[str]:
    """'I live in Berlin and work at Acme' → 'I live in Berlin', 'I work at Acme': one fact each,
    so each can be updated on its own; after a past verb only when the first part fills a slot
    ("I'm 33 and just picked up knitting": the age can change without taking the knitting with it;
    "I went to a workshop and loved it" stays whole)."""
    match = _COMPOUND.match(statement)
    if match is None:
        return [statement]
    subject = match.group("subject")
    first = f"{subject}{match.group('first')}"
    if match.group("common") is None and not read_slot(first, "user").slot:
        return [statement]
    return [first, f"{subject} {match.group('second')}"]


def _kept_part(statement: str) -> str:
    """The statement if it is worth keeping; a filler opening before a comma is cut off first
    ("That's great, I just started at Stripe" → "I just started at Stripe")."""
    if not statement:
        return ""
    reading = read_slot(statement, "user")
    if reading.correction:
        return statement  # "it's Dana, not Diana": reconcile finds what it corrects
    verdict = judge(statement, states_slot=bool(reading.slot))
    if verdict == "filler" and "," in statement:
        rest = statement.split(",", 1)[1].strip()
        return rest if rest and not judge(rest) else ""
    return "" if verdict else statement


def _render(body: str, subject: str, instruction: bool, listener: str) -> str:
    """The sentence as a self-contained, third-person statement ("you" named as the listener)."""
    if instruction:
        return f"Standing instruction from {subject}: {_INSTRUCTION_LEAD.sub('', body)}"
    return capitalise(name_listener(rewrite_first_person(rewrite_we(body, subject), subject), listener))


def _listener(turns: Sequence[Turn], index: int) -> str:
    """Whom 'you' means in this turn: the nearest other speaker (earlier first), else the assistant."""
    speaker = turns[index].speaker
    earlier = [t for t in reversed(turns[:index]) if t.speaker != speaker]
    later = [t for t in turns[index + 1 :] if t.speaker != speaker]
    other = earlier[0] if earlier else later[0] if later else None
    if other is None or other.speaker == UNNAMED_ASSISTANT:
        return "the assistant"
    return subject_for(other.speaker)


def _speaker_names(turns: Sequence[Turn]) -> tuple[str, ...]:
    """Speaker names and their first names (for stripping vocatives like 'Thanks, Mel!')."""
    names: list[str] = []
    for turn in turns:
        for name in (turn.speaker, turn.speaker.split()[0] if turn.speaker.split() else ""):
            if name and name not in names:
                names.append(name)
    return tuple(sorted(names, key=len, reverse=True))


def _question_turn(turns: Sequence[Turn], index: int) -> Turn | None:
    """The previous turn when the other speaker ended it with a question about this speaker."""
    if index == 0:
        return None
    previous = turns[index - 1]
    if previous.speaker == turns[index].speaker:
        return None
    asked = _last_question(previous.text)
    if not asked or _OFFER.search(asked) or not _ABOUT_LISTENER.search(asked):
        return None
    return previous


def _last_question(text: str) -> str:
    questions = [sentence for sentence in split_sentences(text) if sentence.endswith("?")]
    return questions[-1] if questions else ""


def _answers_briefly(sentence: str, clean: str) -> bool:
    """A reply that only makes sense with the question ('Yes, twice.', 'Charlotte's Web!', 'Since
    I was 17 or so')."""
    if sentence.endswith("?") or not clean or not content_words(clean):
        return False
    if len(clean.split()) < 6 and (bool(_ELLIPTICAL.match(sentence)) or len(clean.split()) < 4):
        return True
    return len(clean.split()) <= 12 and is_fragment(clean) and not judge_is_filler(clean)


def judge_is_filler(sentence: str) -> bool:
    """Whether the sentence is a reaction or thanks rather than an answer."""
    return judge(sentence) == "filler"


def _answer_memory(answer: str, turn: Turn, question: Turn) -> CandidateMemory:
    asked = _last_question(question.text)
    asker = "" if question.speaker == UNNAMED_ASSISTANT else f" by {question.speaker}"
    subject = subject_for(turn.speaker)
    return CandidateMemory(
        content=finish(f'Asked{asker} "{asked}", {subject} said: {tidy(answer)}', []),
        kind="fact",
        importance=2,
        tags=["answer"],
        turn_ids=[question.id, turn.id],
        valid_from=turn.timestamp,
    )


def _take_photos(turn: Turn) -> tuple[str, list[CandidateMemory]]:
    """The turn text without photo markers, and one memory per shared photo."""
    memories = [
        CandidateMemory(
            content=f"{capitalise(subject_for(turn.speaker))} shared a photo: {match.group('caption').strip()}",
            kind="event",
            importance=2,
            tags=["photo"],
            turn_ids=[turn.id],
            valid_from=turn.timestamp,
        )
        for match in _PHOTO.finditer(turn.text)
    ]
    return tidy(_PHOTO.sub(" ", turn.text)), memories
