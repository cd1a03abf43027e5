"""The offline rule-based extractor: statements a careful person would keep, without any model.

`RulesExtractor.extract(chunk)` reads each person's turns sentence by sentence (tap.language.rules.text),
keeps the sentences worth keeping (tap.language.rules.keep) and writes each as one self-contained,
third-person, dated statement (tap.language.rules.person, tap.language.rules.dates) with its kind and importance
(tap.language.rules.classify), the slot it fills and what it retracts (tap.language.rules.slots), citing the turn it
came from: "I moved to Lisbon last month" → "The user moved to Lisbon (around April 2026)".

- An unnamed assistant (speaker "Assistant") contributes no statements: what it says is advice and
  general knowledge, and its offers and acknowledgements are filler. What it said stays findable in
  the excerpt layer (tap.language.rules.excerpts). Named speakers are people: their statements are kept
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
from tap.ingest.chunker import Chunk, Turn
from tap.language.death import read_death
from tap.language.gate import WEEKDAYS
from tap.language.goal import read_fulfilment
from tap.language.new_value import read_new_value
from tap.language.rules.classify import classify, importance
from tap.language.rules.dates import collapse_leftovers, resolve_dates
from tap.language.rules.keep import is_filler, is_fragment, is_instruction, why_not_kept
from tap.language.rules.person import (
    COMMON_VERBS,
    capitalise,
    is_work_talk,
    name_listener,
    rewrite_first_person,
    rewrite_we,
    subject_for,
)
from tap.language.rules.referents import Named, named_people, with_referent
from tap.language.rules.slots import read_slot, slot_words, statement_holder, tool_category_in
from tap.language.rules.text import (
    clauses,
    content_words,
    drop_asides,
    is_question_clause,
    normalise_chat,
    restore_subject,
    split_sentences,
    statement_part,
    strip_lead,
)

__all__ = ["RulesExtractor", "with_dates"]

UNNAMED_ASSISTANT = "Assistant"
TENTATIVE = "tentative"
"""The tag of a statement kept by the keep probe where the rules alone would not keep it."""
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
# A question about the listener's situation that names no "you": "What's the rent like?", "How did the
# interview go?", "When is the wedding?" (a quiz question, "What's the capital of France?", is not one)
_ABOUT_SITUATION = re.compile(
    r"^(?:so\s+|and\s+|ok\s+)?(?:(?:what(?:'s|’s| is| was| are| were)\s+the\s+[\w\s-]{1,30}?\s+like"
    r"|(?:how(?:'s|’s| is| was| did| does| are| were)|when(?:'s|’s| is| was| are| were))\s+the\s+[\w-]+)\b)",
    re.IGNORECASE,
)
_INSTRUCTION_LEAD = re.compile(r"^(?:please\s+)", re.IGNORECASE)


class _TurnContext(msgspec.Struct, frozen=True, kw_only=True):
    """What a turn's extraction needs to know about its neighbours."""

    turn: Turn
    question: Turn | None  # the previous turn, when it is the other speaker's question about this one
    names: tuple[str, ...]
    listener: str  # whom "you" means: the other speaker's name, or "the assistant"
    named: tuple[Named, ...] = ()  # the people this speaker named earlier in the chunk (tap.language.rules.referents)
    # the assistant's turn just before this one (the options a brief reply picks from: "how do I sync…?"
    # — "…Syncthing (Android)…" — "android, so syncthing"), and this speaker's question it answered
    offered: Turn | None = None
    asked: Turn | None = None


def with_dates(body: str, dates: Sequence[str]) -> str:
    """Trim trailing punctuation and append the resolved dates in parentheses."""
    body = re.sub(r"[\s.!…,;:~-]+$", "", body)
    return f"{body} ({'; '.join(dates)})" if dates else body


class RulesExtractor:
    """Sentence-level, pattern-based extraction: the offline default extractor."""

    def extract(self, chunk: Chunk) -> list[CandidateMemory]:
        """Candidate memories from every person's turn of the chunk, in turn order, without duplicates."""
        names = _speaker_names(chunk.turns)
        found: list[CandidateMemory] = []
        people: dict[str, list[Named]] = {}
        for index, turn in enumerate(chunk.turns):
            if turn.speaker == UNNAMED_ASSISTANT:
                continue
            context = _TurnContext(
                turn=turn,
                question=_question_turn(chunk.turns, index),
                names=names,
                listener=_listener(chunk.turns, index),
                named=tuple(people.get(turn.speaker, ())),
                **_own_question_and_reply(chunk.turns, index),
            )
            found += self.from_turn(context)
            people.setdefault(turn.speaker, []).extend(named_people(turn.text, unnamed=False))
        return merge_duplicates(_apply_corrections(found))

    def from_turn(self, context: _TurnContext) -> list[CandidateMemory]:
        """Memories from one turn: shared photos, then its statements."""
        text, found = _take_photos(context.turn)
        question = context.question
        chooses = question is None  # only the turn's first sentence can pick one of the options offered
        people = list(context.named)
        said = (drop_asides(sentence) for sentence in split_sentences(normalise_chat(text)))
        for sentence in _join_new_values([s for s in said if s]):
            known, people = people, [*people, *named_people(sentence)]
            bare = _BARE_CORRECTION.search(sentence)
            named = read_slot(sentence, context.turn.speaker).correction if bare is None else ()
            if bare is not None or named:  # "scratch that, it's the 14th", "oops Elsa, not Ilse"
                wrong, right = named if named else ("", bare.group("right") if bare else "")
                found.append(_correction(sentence, wrong, right, context.turn))
                question = None
                continue
            if chooses and context.offered is not None:
                choice, sentence = _picked(strip_lead(sentence, ()), context.offered)
                if choice:  # "deuter, my wife had one as a kid": the pick, then whatever else is said
                    found.append(_choice_memory(choice, context.turn, context.offered, context.asked))
                    chooses = False
            statements = _statements(with_referent(strip_lead(sentence, context.names), known), context.names)
            clean = ", ".join(statements)
            if question is not None and _answers_briefly(sentence, clean):
                answer = sentence if _ELLIPTICAL.match(sentence) else strip_lead(sentence, ())
                found.append(_answer_memory(answer, context.turn, question))
            else:
                made = (self.from_sentence(statement, context.turn, context.listener) for statement in statements)
                found += [memory for memory in made if memory is not None]
            if clean or content_words(sentence):
                chooses = False
            if clean:
                question = None  # only the first sentence past the greetings answers the question
        return found

    def from_sentence(self, clean: str, turn: Turn, listener: str = "the assistant") -> CandidateMemory | None:
        """One memory from one lead-stripped sentence, or None when it is not worth keeping."""
        part = statement_part(clean)
        statement = _kept_part(part)
        tentative = not statement
        if tentative:
            statement = _tentative_part(part)
            if not statement:
                return None
        instruction = is_instruction(statement)
        reading = read_slot(statement, turn.speaker, work=is_work_talk(statement))
        slot = reading.slot
        kind = classify(statement, instruction=instruction, slot=slot)
        if slot == "team|name":  # "we're Inkwell now" → "our team is now called Inkwell"
            statement = _TEAM_NAMED.sub("our team is now called ", statement, count=1)
            statement = re.sub(r"\s+now(?=\W*$)", "", statement)
        if slot.endswith("|age"):  # "I'm 33" → "… is 33 years old": a bare number says nothing alone
            statement = _BARE_AGE.sub(r"\g<0> years old", statement, count=1)
        body, dates = resolve_dates(statement, turn.timestamp)
        subject = subject_for(turn.speaker)
        content = _render(body, subject, instruction, listener)
        third_party = not re.search(r"\b(?:I|my|me|we|our|us)\b", statement, re.IGNORECASE)
        return CandidateMemory(
            content=with_dates(content, dates),
            kind=kind,
            importance=importance(kind, slot=slot, dated=bool(dates), third_party=third_party and not instruction),
            tags=[t for t in (kind, slot.split("|")[-1] if slot else "", reading.change, TENTATIVE * tentative) if t],
            turn_ids=[turn.id],
            valid_from=turn.timestamp,
            slot=slot,
            slot_part=reading.part,
            slot_value=reading.value,
            retracts=list(reading.retracts),
            correction=list(reading.correction),
            context=slot_words(slot),
            holder=statement_holder(statement, turn.speaker, work=is_work_talk(statement)),
            deceased=list(read_death(statement)) if any(read_death(statement)) else [],
            fulfils=read_fulfilment(statement),
            new_value=read_new_value(statement),
            tentative=tentative,
        )


_OWN_SUBJECT = re.compile(
    r"^(?:(?:and|but|so|plus|also)\s+)?(?:I|I'm|I’m|I've|I’ve|I'd|I'll|we|we're|we’re|we've|my|our"
    r"|[A-Z][\w’'-]+\s+(?:is|was|has"
    r"|runs|uses|stays|moved|started|works|lives|[a-z]+(?:s|ed)))\b"
)
# a part of the work named as the subject: "…, frontend is SvelteKit", "the api runs on Go"; a
# statement of its own only when it is kept alone (else it stays with the clause before it)
_PART_SUBJECT = re.compile(
    r"^(?:(?:and|but|so|plus|also)\s+)?(?:the\s+)?(?:backend|frontend|front-end|back-end|api|database|db|mobile app"
    r"|web app|website|infra|infrastructure|ci)\s+(?:is|are|uses|runs)\b",
    re.IGNORECASE,
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
        if groups and _with_the_one_named(clause, groups[-1]):
            groups[-1].append(clause)  # "my best friend is Jake, we met in college": "we" is the two of them
        elif groups and _elaborates(clause):
            if why_not_kept(restore_subject(strip_lead(", ".join(groups[-1]), names))) in ("", "too-short"):
                groups[-1].append(clause)  # a reason or feeling goes with what it is about, or not at all
        elif groups and not _starts_statement(clause, names):
            groups[-1].append(clause)  # "I don't run anymore, I swim now": "I swim now" says too little alone
        else:
            groups.append([clause])
    stripped = (strip_lead(", ".join(g), names) for g in groups)
    # filler is judged before a dropped "I" is restored: "have fun, …" is not "I have fun, …"
    statements = [s for s in (_tool_now(restore_subject(g)) for g in stripped if not is_filler(g)) if s]
    return [part for statement in statements for part in _split_compound(statement)]


# "GitHub Actions for everything now", "Postgres these days": a tool named as what is used now, verbless
_TOOL_NOW = re.compile(
    r"^(?P<tool>[\w.+#-]+(?:\s+[\w.+#-]+)?)\s+(?:for\s+[\w\s]{1,30}?\s+)?(?:now|these days|from now on)\s*[.!…]*$",
    re.IGNORECASE,
)


def _tool_now(statement: str) -> str:
    """'GitHub Actions for everything now' → 'we use GitHub Actions for everything now' (the team's
    tool, as chat says it without a verb); any other statement as it is."""
    match = _TOOL_NOW.match(statement)
    return f"we use {statement}" if match and tool_category_in(match.group("tool")) else statement


def _starts_statement(clause: str, names: Sequence[str]) -> bool:
    """Whether a clause after the first starts a statement of its own: it has a subject of its own
    and is not too short alone, or names a part of the work and is kept alone."""
    if _PART_SUBJECT.match(clause):
        return _verdict_alone(clause, names) == ""
    return bool(_OWN_SUBJECT.match(clause)) and _verdict_alone(clause, names) != "too-short"


def _verdict_alone(clause: str, names: Sequence[str]) -> str:
    """What keep.why_not_kept says of a clause standing alone ('' when it is kept)."""
    alone = restore_subject(strip_lead(clause, names))
    reading = read_slot(alone, "user")
    slotted = bool(reading.slot or reading.retracts or tool_category_in(alone))
    return why_not_kept(alone, states_slot=slotted)


_CHANGED_THING = re.compile(
    r"^(?:(?:so|and|also|ok|okay)\s+)?(?:I\s+|we\s+)?(?:just\s+|finally\s+)?(?:changed|switched|updated|swapped)\s+"
    r"(?P<thing>(?:my|our)\s+[\w'’-]+(?:\s+[\w'’-]+){0,2})\s*[!.…]*$",
    re.IGNORECASE,
)
_NOW_ITS = re.compile(
    r"^(?:and\s+|so\s+)?(?:now\s+)?(?:it'?s|it’s|its|it is)\s+(?:now\s+)?(?P<value>\S.*?)(?:\s+now)?\s*[!.…]*$",
    re.IGNORECASE,
)
_RENAMED_NOW = re.compile(
    r"\b(?P<verb>renamed|named|called)\s+(?P<thing>(?:the|my|our|his|her|their)\s+[\w'’-]+),?\s+"
    r"(?:he|she|it|they)(?:'s|’s|s| is| are|'re|’re)\s+(?P<value>[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)?)\s+now\b"
)


def _join_new_values(sentences: list[str]) -> list[str]:
    """What a chat says in two steps becomes one statement (the second step alone would be a
    fragment): "changed my thesis topic!! now it's battery scheduling" → "my thesis topic changed to
    battery scheduling"; "renamed the kitten, he's Mochi now" → "renamed the kitten Mochi"; "we
    adopted a kitten!!! he's 10 weeks, named him Pickle" → one sentence."""
    joined: list[str] = []
    for sentence in sentences:
        sentence = _RENAMED_NOW.sub(r"\g<verb> \g<thing> \g<value>", sentence)
        keyed = _KEY_VALUE.match(sentence)
        if keyed is not None and keyed.group("key").lower() not in _NOT_KEYS:  # "date: june 12 next year",
            # "New number: 555-9876, the old one is dead"
            sentence = f"my {keyed.group('key').lower()} is {keyed.group('value')}{keyed.group('rest') or ''}"
        changed = _CHANGED_THING.match(joined[-1]) if joined else None
        now = _NOW_ITS.match(sentence) if changed else None
        if changed and now and len(now.group("value").split()) >= 1:
            joined[-1] = f"{changed.group('thing')} changed to {now.group('value')}"
            continue
        if joined and _PRONOUN_DETAIL.match(sentence) and _ENDS_WITH_THING.search(joined[-1].rstrip(" !.…")):
            joined[-1] = f"{joined[-1].rstrip(' !.…')}, {sentence[0].lower()}{sentence[1:]}"  # one thing, said in two
            continue
        joined.append(sentence)
    return joined


_PRONOUN_DETAIL = re.compile(
    r"^(?:he|she|it|they)(?:'s|’s|s| is| was| are| were|'re|’re)\s+(?=[^.!?]*(?:\d|(?<=\s)[A-Z][a-z]))", re.IGNORECASE
)
_ENDS_WITH_THING = re.compile(r"\b(?:a|an|my|our|the)\s+(?:[a-z][\w'’-]+\s+){0,2}[a-z][\w'’-]+$", re.IGNORECASE)


_KEY_VALUE = re.compile(
    r"^(?:(?:ok|okay|so|and|also)\s+)?(?P<key>[A-Za-z][a-z]{2,}(?:\s+[a-z]{3,})?):\s+"
    r"(?P<value>(?![^:;?,]*\b(?:is|are|was|were|has|have|had)\b)[^:;?,]*\d[^:;?,]{0,30}?)\s*(?P<rest>,[^:;?]*)?[.!]*$"
)
_NOT_KEYS = frozenset(
    "note edit update question answer context example error output input step tldr summary reminder warning tip "
    "fyi btw result results version log logs code".split()
)
_BARE_CORRECTION = re.compile(
    r"\b(?:scratch that|sorry|i mean|i meant|correction|actually|wait,? no|no wait|my bad|typo)\b[,:;!.\s-]*"
    r"(?:it'?s|its|it’s|it is|it should be|should be|make that|(?:they|we|I)?\s*(?:moved|changed|pushed|switched"
    r"|rescheduled) it to)\s+(?:on\s+)?(?:the\s+)?"
    r"(?P<right>\d{1,2}(?:st|nd|rd|th)\b|\d[\d.,:]*(?:\s?(?:am|pm))?|(?-i:[A-Z][\w'’-]+))"
    r"(?:\s+(?:same time|instead|now))?\s*[.!…]*$",
    re.IGNORECASE,
)
_TYPED_SLOTS: tuple[re.Pattern[str], ...] = (
    re.compile(r"(?<![\d.,:£$€])\b\d{1,2}(?:st|nd|rd|th)?\b(?![\d.,:%])"),  # a day of the month
    re.compile(r"\b\d{1,2}(?::\d{2})?\s?(?:am|pm)\b|\b\d{1,2}:\d{2}\b", re.IGNORECASE),  # a time of day
    re.compile(r"\d[\d.,]*"),  # an amount
    re.compile(r"(?<=\s)[A-Z][\w'’-]+"),  # a name (not the opening word)
)


def _correction(sentence: str, wrong: str, right: str, turn: Turn) -> CandidateMemory:
    """A correction ("it's Dana, not Diana"; a bare "scratch that, it's the 14th" has no wrong value):
    `_apply_corrections` settles it inside the chunk, else reconcile against the stored memories."""
    return CandidateMemory(
        content=collapse_leftovers(sentence),
        kind="fact",
        importance=3,
        tags=["correction"],
        turn_ids=[turn.id],
        valid_from=turn.timestamp,
        correction=[wrong, right],
    )


def _apply_corrections(found: list[CandidateMemory]) -> list[CandidateMemory]:
    """Corrections settled inside the chunk: the latest earlier statement naming the wrong value (for a
    bare "scratch that, it's the 14th": the latest with a value of the same type) is rewritten with
    the right one and cites the correction's turn too; the wrong value is never stored. A correction
    with nothing to correct here is kept for reconcile (it may correct a stored memory), except a bare
    one, which means nothing alone."""
    out: list[CandidateMemory] = []
    for candidate in found:
        if not candidate.correction:
            out.append(candidate)
            continue
        wrong, right = candidate.correction[0], candidate.correction[1]
        for index in range(len(out) - 1, -1, -1):
            earlier = out[index]
            moved = _moved_day(earlier.content, right, candidate.valid_from) if not wrong else ""
            if moved:  # "on Monday" … "actually it's Thursday": the date is resolved again, not one word swapped
                turns = earlier.turn_ids + [t for t in candidate.turn_ids if t not in earlier.turn_ids]
                out[index] = msgspec.structs.replace(earlier, content=moved, turn_ids=turns)
                break
            target = wrong or _same_type_value(earlier.content, right)
            if target and re.search(rf"\b{re.escape(target)}\b", earlier.content):
                corrected = re.sub(rf"\b{re.escape(target)}\b(?!.*\b{re.escape(target)}\b)", right, earlier.content)
                turns = earlier.turn_ids + [t for t in candidate.turn_ids if t not in earlier.turn_ids]
                out[index] = msgspec.structs.replace(earlier, content=corrected, turn_ids=turns)
                break
        else:
            if wrong:
                out.append(candidate)
    return out


_RESOLVED_WEEKDAY = re.compile(rf"\((?i:on (?:{'|'.join(WEEKDAYS)})) \d{{1,2}} [A-Z][a-z]+ \d{{4}}\)")


def _moved_day(content: str, right: str, timestamp: float) -> str:
    """The content with its resolved weekday replaced by the weekday `right` names, resolved from
    the correction's own date ("(on Monday 15 May 2023)" → "(on Thursday 11 May 2023)"); '' when
    `right` is no weekday or the content holds no resolved weekday."""
    if right.lower() not in WEEKDAYS or not _RESOLVED_WEEKDAY.search(content):
        return ""
    _, dates = resolve_dates(f"it is on {right}", timestamp)
    if not dates:
        return ""
    return _RESOLVED_WEEKDAY.sub(f"({dates[0]})", content, count=1)


def _same_type_value(content: str, right: str) -> str:
    """The last value in the content of the type the right value has (a day, a time, an amount, a name)."""
    for pattern in _TYPED_SLOTS:
        if pattern.fullmatch(right):
            values = [m.group(0) for m in pattern.finditer(content)]
            return values[-1] if values else ""
    return ""


_BARE_AGE = re.compile(r"\b(?:I'm|I’m|I am|turned|is)\s+\d{1,3}\b(?!\s*(?:years?|yrs?|y/?o)\b)", re.IGNORECASE)
_TEAM_NAMED = re.compile(r"^(?:(?:ok|okay|so|and)\s+)?we(?:'re|’re| are)\s+(?:now\s+)?(?:called\s+)?", re.IGNORECASE)
_FIRST_PERSON_OPENING = re.compile(
    r"^(?:(?:and|but|so|plus|also)\s+)?I(?:'m|’m|'ve|’ve)?(?![\w'’])"
    # what changed, a plan or a liking is news of its own, not a remark on the clause before
    r"(?!\s+(?:(?:really|also|just|kinda|kind of|so|totally|absolutely)\s+)?(?:was|used to|moved|left|quit|switched"
    r"|started|joined|stopped|no longer|will|going to|gonna|plan|want|like|love|hate|prefer|enjoy|adore"
    r"|can'?t stand)\b)"
)
_DETAIL = re.compile(r"\d|(?<=\s)(?!I\b|I['’])[A-Z]")
# "…, but I've noticed that my network is mostly male": a contrast is news of its own
_CONTRAST = re.compile(r"^(?:but|though|although|yet|however|still)\b", re.IGNORECASE)
MAX_ELABORATION_WORDS = 10  # longer, it says something of its own, and merged it would blur the fact before it


# what two people do with each other: "we met in college", "we don't talk anymore", "we broke up"
_TOGETHER = re.compile(
    r"^(?:(?:and|but|so)\s+)?we(?:'ve|’ve|'re|’re|\s+have|\s+had|\s+are|\s+were)?\s+(?:[\w'’]+\s+)?"
    r"(?:met|meet|talk|talked|speak|spoke|broke\s+up|split|fell\s+out|got\s+married|got\s+engaged|married"
    r"|dated|date|argue|argued|fight|fought|hang\s+out|hung\s+out|grew\s+up|been\s+together|together|friends"
    r"|known\s+each\s+other|keep\s+in\s+touch|kept\s+in\s+touch|lost\s+touch)\b",
    re.IGNORECASE,
)
_SOMEONE_NAMED = re.compile(r"(?<=\s)[A-Z][a-z]+\b|^[A-Z][a-z]+\s+and\s+I\b")


def _with_the_one_named(clause: str, group: Sequence[str]) -> bool:
    """Whether a clause says what the speaker and someone the clause before it names do together
    ("my best friend is Jake, we met in college"): alone, its "we" would read as the speaker's
    household ("the user met in college")."""
    return bool(_TOGETHER.match(clause)) and bool(_SOMEONE_NAMED.search(", ".join(group)))


def _elaborates(clause: str) -> bool:
    """A first-person clause after another clause of the same sentence that adds no detail of its own
    (no name, number or tool, no slot, nothing taken back): the reason for or a feeling about what
    the clause before it says ("always give me prices in euros, I never know what yen means"; "I
    hate audiobooks, I fall asleep every time"). It stays with that clause rather than becoming a
    memory of its own ("The user never knows what yen means" means little alone)."""
    if not _FIRST_PERSON_OPENING.match(clause) or _DETAIL.search(clause) or tool_category_in(clause):
        return False
    if _CONTRAST.match(clause) or len(clause.split()) > MAX_ELABORATION_WORDS:
        return False
    reading = read_slot(clause, "user")
    return not (reading.slot or reading.retracts or reading.correction or reading.change)


_COMPOUND = re.compile(
    rf"^(?P<subject>I|we)\b(?P<first>[^,;]{{4,}}?)\s+and\s+"
    rf"(?P<second>(?:(?:also|just|recently|finally|now|then)\s+)?(?:(?P<common>{COMMON_VERBS})|[a-z]{{3,}}ed)\b.*)$",
    re.IGNORECASE,
)


# "…, and my sister lives in Braga": a second subject of the speaker's own (kin, pet, colleague)
# with its own verb ("I … and my …", "we … and our …": after "I", "our" names a group the
# sentence may have named: "I'm a guard for the team and our opener is next week"). Not when the
# second clause points back ("my dog loves it too"): alone it would say nothing.
_POINTS_BACK = r"(?:it|that|this|them|too|either|one|he|she|him|her|his|they|their)"
_OTHER_SUBJECT = re.compile(
    r"^(?P<first>(?:I\b(?=[^,;]{4,}?,?\s+and\s+my\b)|we\b(?=[^,;]{4,}?,?\s+and\s+our\b))[^,;]{4,}?),?\s+and\s+"
    r"(?P<second>(?:my|our)\s+(?:[a-z]+\s+){0,2}?"
    r"(?:is|are|was|were|has|have|lives|works|does|doesn't|isn't|can't|won't|hates|loves|likes|prefers|plays"
    rf"|studies|teaches|runs|drives|speaks|needs|wants|goes)\b(?!.*\b{_POINTS_BACK}\b).{{3,}})$",
    re.IGNORECASE,
)


# "I live in Porto and I work at Stripe", "I'm 34 and I'm a nurse": the "I" said again (not "we":
# whether it is the team or the household is read from the whole sentence)
_SAME_SUBJECT_AGAIN = re.compile(
    r"^(?P<first>I\b[^,;]{4,}?),?\s+and\s+(?P<second>I(?:'m|’m| am)?\b.{3,})$"
    # "we use Postgres and we deploy on fly.io": the team's, or the household's, two facts
    r"|^(?P<we_first>[Ww]e\b[^,;]{4,}?),?\s+and\s+(?P<we_second>we(?:'re|’re| are)?\b.{3,})$"
)


def _split_compound(statement: str) -> list[str]:
    """'I live in Berlin and work at Acme' → 'I live in Berlin', 'I work at Acme': one fact each,
    so each can be updated on its own; after a past verb only when the first part fills a slot
    ("I'm 33 and just picked up knitting": the age can change without taking the knitting with it;
    "I went to a workshop and loved it" stays whole). A second subject of the speaker's own is a
    fact of its own too: "I live in Porto and my sister lives in Braga" (the user's home can change
    without taking the sister's with it), when each part is worth keeping alone ("I went there and
    my mum was happy" stays whole). So is a second clause that says its "I" (or its "we") again,
    when either part fills a slot ("I'm 34 and I work remotely from Porto": turning 35 no longer
    retires Porto; "we use Postgres and we deploy on fly.io": two tools, each updated alone)."""
    other = _OTHER_SUBJECT.match(statement)
    if other is not None:
        parts = [*_split_compound(other.group("first")), other.group("second")]
        return parts if all(_kept_part(part) for part in parts) else [statement]
    again = _SAME_SUBJECT_AGAIN.match(statement)
    if again is not None:  # a slot in either part: each is a fact to update on its own, when it stands alone
        first = again.group("first") or again.group("we_first")
        second = again.group("second") or again.group("we_second")
        slotted = read_slot(first, "user").slot or read_slot(second, "user").slot
        if slotted and _kept_part(first) and _kept_part(second):
            return [*_split_compound(first), *_split_compound(second)]
    match = _COMPOUND.match(statement)
    if match is None:
        return [statement]
    subject = match.group("subject")
    first = f"{subject}{match.group('first')}"
    if match.group("common") is None and not read_slot(first, "user").slot:
        return [statement]
    parts = [first, f"{subject} {match.group('second')}"]
    # a part too thin to keep alone stays whole: "I usually wake up at 6 and go for a run"
    return parts if all(_kept_part(part) for part in parts) else [statement]


def _kept_part(statement: str) -> str:
    """The statement if it is worth keeping; a filler opening before a comma is cut off first
    ("That's great, I just started at Stripe" → "I just started at Stripe")."""
    if not statement:
        return ""
    reading = read_slot(statement, "user")
    if reading.correction:
        return statement  # "it's Dana, not Diana": reconcile finds what it corrects
    # what fills a slot or takes something back is worth keeping however short ("I quit smoking")
    verdict = why_not_kept(statement, states_slot=bool(reading.slot or reading.retracts))
    if verdict == "filler" and "," in statement:
        rest = statement.split(",", 1)[1].strip()
        return rest if rest and not why_not_kept(rest) else ""
    return "" if verdict else statement


_SOFT_VERDICTS = frozenset({"too-short", "fragment", "no-anchor", "too-long"})
"""Why the rules leave a sentence out when the reason is its wording, not what it is (a question, a
request, filler, a hypothetical, a secret, code): such a sentence is still proposed, as tentative."""


def _tentative_part(statement: str) -> str:
    """The statement, when the rules leave it out only for its wording (_SOFT_VERDICTS) and it has
    at least two words; else ''."""
    if len(statement.split()) < 2:
        return ""
    return statement if why_not_kept(statement) in _SOFT_VERDICTS else ""


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
    if not asked or _OFFER.search(asked) or not (_ABOUT_LISTENER.search(asked) or _ABOUT_SITUATION.search(asked)):
        return None
    return previous


def _own_question_and_reply(turns: Sequence[Turn], index: int) -> dict[str, Turn | None]:
    """`offered` of the turn's context: the assistant's turn just before it; and `asked`: this
    speaker's question the assistant was answering, when the turn before that asked one."""
    if index < 1 or turns[index - 1].speaker != UNNAMED_ASSISTANT:
        return {}  # between people a short echo is agreement, not a pick ("favourite book?" — "Dune!" — "Dune!!")
    asked = turns[index - 2] if index >= 2 else None
    if asked is None or asked.speaker != turns[index].speaker or not _last_question(asked.text, unmarked=True):
        asked = None
    return {"offered": turns[index - 1], "asked": asked}


def _picked(sentence: str, offered: Turn) -> tuple[str, str]:
    """(choice, rest): the sentence's opening clauses when they only name things the assistant just
    offered as options ("android, so syncthing" after "…iCloud Drive (iPhone) or Syncthing
    (Android)…"; "the deuter, my wife had one" → "the deuter"), and what follows them. No choice
    when the reply asks, thanks, or names anything not offered, or the assistant offered no choice."""
    if sentence.endswith("?") or verdict_is_filler(sentence):
        return "", sentence
    offered_words = {word.lower() for word in content_words(offered.text)}
    parts = re.split(r",\s*", sentence)
    taken = 0
    for part in parts:
        words = content_words(part)
        if not words or len(part.split()) > 6 or any(word.lower() not in offered_words for word in words):
            break
        taken += 1
    choice = ", ".join(parts[:taken])
    if not choice or not _offer_of(offered.text, content_words(choice)):
        return "", sentence
    return choice, ", ".join(parts[taken:])


def _offer_of(text: str, words: Sequence[str]) -> str:
    """The assistant's sentence that offers the chosen words among others ('' when none does): it
    names them and sets out alternatives ("A or B", a list of three, a question)."""
    wanted = {word.lower() for word in words}
    for sentence in split_sentences(text):
        if wanted <= {word.lower() for word in content_words(sentence)}:
            alternatives = " or " in sentence or sentence.count(",") >= 2 or sentence.endswith("?")
            return sentence if alternatives else ""
    return ""


_OFFER_QUOTE_WORDS = 30


def _quoted_offer(sentence: str, chosen: Sequence[str]) -> str:
    """The offer as quoted in a choice: whole when short, else the option that names the choice
    ("…overnight oats with soy milk…" out of a list of five breakfasts)."""
    if len(sentence.split()) <= _OFFER_QUOTE_WORDS:
        return sentence
    wanted = {word.lower() for word in chosen}
    parts = re.split(r"[,;:]\s+|\s\d+[.)]\s", sentence)
    options = [re.sub(r"^\d+[.)]\s*", "", part).strip() for part in parts if part.strip()]
    best = max(options, key=lambda part: len(wanted & {w.lower() for w in content_words(part)}))
    return f"…{best.rstrip(' .')}…"


def _choice_memory(choice: str, turn: Turn, offered: Turn, asked: Turn | None) -> CandidateMemory:
    """'The user asked "which laptop…?", then chose: the thinkpad'; without the question, the offer
    it picked from is quoted instead."""
    subject = subject_for(turn.speaker)
    picked = collapse_leftovers(rewrite_first_person(choice, subject)).rstrip(" .!…")
    if asked is not None:
        content = f'{capitalise(subject)} asked "{_last_question(asked.text, unmarked=True)}", then chose: {picked}'
    else:
        offer = _quoted_offer(_offer_of(offered.text, content_words(choice)), content_words(choice))
        content = f'{capitalise(subject)} chose {picked} from the assistant\'s options: "{offer}"'
    reading = read_slot(choice, turn.speaker)
    return CandidateMemory(
        content=with_dates(content, []),
        kind="decision",
        importance=2,
        tags=["decision", "answer"],
        turn_ids=[asked.id, turn.id] if asked is not None else [offered.id, turn.id],
        valid_from=turn.timestamp,
        slot=reading.slot,
        slot_part=reading.part,
        slot_value=reading.value,
        context=slot_words(reading.slot),
    )


def _last_question(text: str, *, unmarked: bool = False) -> str:
    """The last question in a turn; with `unmarked`, also one without its question mark, as chat
    often has it ("how do I sync between my laptop and phone without paying"), given one."""
    questions = [
        sentence
        for sentence in split_sentences(text)
        if sentence.endswith("?") or (unmarked and is_question_clause(sentence.split(",")[0]))
    ]
    if not questions:
        return ""
    return questions[-1] if questions[-1].endswith("?") else questions[-1] + "?"


def _answers_briefly(sentence: str, clean: str) -> bool:
    """A reply that only makes sense with the question ('Yes, twice.', 'Charlotte's Web!', 'Since
    I was 17 or so')."""
    if sentence.endswith("?") or not clean or not content_words(clean):
        return False
    if len(clean.split()) < 6 and (bool(_ELLIPTICAL.match(sentence)) or len(clean.split()) < 4):
        return True
    return len(clean.split()) <= 12 and is_fragment(clean) and not verdict_is_filler(clean)


def verdict_is_filler(sentence: str) -> bool:
    """Whether the sentence is a reaction or thanks rather than an answer."""
    return why_not_kept(sentence) == "filler"


def _answer_memory(answer: str, turn: Turn, question: Turn) -> CandidateMemory:
    asked = _last_question(question.text)
    asker = "" if question.speaker == UNNAMED_ASSISTANT else f" by {question.speaker}"
    subject = subject_for(turn.speaker)
    reading = read_slot(answer, turn.speaker)  # "no fish either, full veggie": the diet, as a statement would
    return CandidateMemory(
        content=with_dates(f'Asked{asker} "{asked}", {subject} said: {collapse_leftovers(answer)}', []),
        kind="fact",
        importance=2,
        tags=["answer"],
        turn_ids=[question.id, turn.id],
        valid_from=turn.timestamp,
        slot=reading.slot,
        slot_part=reading.part,
        slot_value=reading.value,
        context=slot_words(reading.slot),
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
    return collapse_leftovers(_PHOTO.sub(" ", turn.text)), memories
