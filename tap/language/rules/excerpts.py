"""Excerpts: the verbatim layer beside the memories (kind `episode`).

Statements are what a careful person keeps; excerpts are what they could look up: every turn of
a conversation that says anything (user and assistant alike), verbatim, dated and cited, cut into
passages of at most PASSAGE_WORDS words at sentence boundaries. They let recall answer "which
hotel did you recommend?" or "what did I say my flight number was?" when no statement was kept,
and they are listed apart from memories and shown after them in a block (tap.recall.engine).

A passage's vector comes from its first VECTOR_WORDS words (`vector_text`; for an assistant
turn, from the turn's opening words, its topic, shared by all its passages), while the lexical
index holds every passage in full. A turn's first passage also carries the end of the turn before
it as `context`, searched by words but not shown: an answer is found by the question it answers
("What got you into running?" → "Mostly to clear my head"). Measured side by side (LoCoMo and a
LongMemEval dev subset): vectors of the full passage plus its context gave the same evidence
recall (75.1 vs 75.3; 87.0 vs 87.0) at about half the ingestion rate, embedding being most of the
offline pipeline's work.

A turn that carries no fact of its own is tagged so recall gives it only the room statements and
other excerpts leave (tap.recall.engine): QUESTION_TAG, in a chat with an unnamed assistant, when
every sentence of it asks (or is filler, "Thanks! What should I feed my dog?") and it names
nothing; ACKNOWLEDGEMENT_TAG when an unnamed assistant says nothing but filler ("Noted, I'll keep
that in mind."), or filler and the user's statement back in the user's words. Both are read from
the sentences' shape with the rules' own detectors of questions and filler (tap.language.rules.text,
keep), not from lists of phrasings.

Invariants: pure and deterministic; a passage cites exactly the one turn it comes from (once
stored, also the later turns that repeat it: tap.extract.pipeline); ids are
derived from the conversation, the turn and the passage's position (`excerpt_key`), so
overlapping chunks yield the same excerpt once.
"""

from __future__ import annotations

import re

import msgspec

from tap.candidates import CandidateMemory
from tap.ingest.chunker import Chunk, Turn
from tap.language.rules.keep import is_filler
from tap.language.rules.text import clauses, content_words, is_question_clause, split_sentences, strip_lead
from tap.records import ACKNOWLEDGEMENT_TAG, QUESTION_TAG

__all__ = ["PASSAGE_WORDS", "VECTOR_WORDS", "Excerpt", "acknowledges", "only_asks", "says_something", "turn_excerpts"]

PASSAGE_WORDS = 60
MIN_CONTENT_WORDS = 3
CONTEXT_WORDS = 30
_NAME_OR_NUMBER = re.compile(r"\d|(?<=\s)[A-Z][a-z]+")
VECTOR_WORDS = 32
UNNAMED_ASSISTANT = "Assistant"
_NAMED = re.compile(r"\d+(?:[.,:]\d+)*|(?<=[^.!?…\s]\s)[A-Z][a-z]+")  # a number, or a capital inside a sentence


class Excerpt(msgspec.Struct, frozen=True, kw_only=True):
    """One passage of one turn, as a candidate memory, with its id key and vector text."""

    candidate: CandidateMemory
    key: str
    vector_text: str


def _passages(text: str) -> list[str]:
    """The text cut at sentence boundaries into pieces of at most PASSAGE_WORDS words (a longer
    sentence is cut at word boundaries)."""
    pieces: list[str] = []
    current: list[str] = []
    for sentence in split_sentences(text):
        words = sentence.split()
        while len(words) > PASSAGE_WORDS:
            if current:
                pieces.append(" ".join(current))
                current = []
            pieces.append(" ".join(words[:PASSAGE_WORDS]))
            words = words[PASSAGE_WORDS:]
        if current and len(current) + len(words) > PASSAGE_WORDS:
            pieces.append(" ".join(current))
            current = []
        current += words
    if current:
        pieces.append(" ".join(current))
    return pieces


def lead_in(previous: Turn | None, turn: Turn) -> str:
    """The end of the other speaker's turn just before this one (the question it answers), for
    search only: at most CONTEXT_WORDS words."""
    if previous is None or previous.speaker == turn.speaker:
        return ""
    words = previous.text.split()
    return f"{previous.speaker}: " + " ".join(words[-CONTEXT_WORDS:])


def says_something(text: str) -> bool:
    """Whether a turn is worth keeping verbatim: three content words, or two with a name or a number
    ("It's Shia Labeouf!", "Flight 447 tomorrow"), not "ok thanks!"."""
    words = content_words(text)
    if len(words) >= MIN_CONTENT_WORDS:
        return True
    return len(words) >= 2 and bool(_NAME_OR_NUMBER.search(text))


def _sentences(text: str) -> list[str]:
    """The turn's sentences without their opening interjections ("Oh wow, …")."""
    return [s for s in (strip_lead(sentence, ()) for sentence in split_sentences(text)) if s]


def _asks(sentence: str) -> bool:
    """A question: a question mark, or a question's opening without a full stop or an exclamation
    mark at the end (chat drops the question mark: "what should I feed my dog")."""
    end = sentence.rstrip()
    return end.endswith("?") or (is_question_clause(end) and not end.endswith((".", "!")))


def _states(sentence: str) -> bool:
    """Whether the sentence says something beside its question and filler clauses ("Great idea,
    except I don't like dark beer"; "how do I…, I've been on nights for 3 months")."""
    parts = clauses(sentence) if _asks(sentence) else clauses(sentence) or [sentence]
    return any(not is_filler(part) for part in parts)


def only_asks(text: str) -> bool:
    """Whether the turn asks and says nothing else but filler ("Thanks! Can my dog eat rice?"), and
    names nothing: a question that names a person, a place or a number ("Did you go skiing in
    Banff?", "How about Wednesday at 4?") tells what it names."""
    sentences = _sentences(text)
    if _NAMED.search(" ".join(sentences)) or not any(_asks(s) for s in sentences):
        return False
    return not any(_states(s) for s in sentences)


def _stems(text: str) -> set[str]:
    """The text's content words, hyphenated ones split, a plural's "s" dropped ("three-year-old" and
    "three years old" are the same words)."""
    return {word.removesuffix("s") for word in content_words(text.replace("-", " "))}


def acknowledges(turn: Turn, previous: Turn | None) -> bool:
    """Whether an unnamed assistant's turn carries nothing beyond acknowledging: only filler ("Noted,
    I'll keep that in mind."), or filler and the user's statement said back in the user's own words
    ("Noted, Rex is a three-year-old beagle.")."""
    if turn.role != "assistant" or turn.speaker != UNNAMED_ASSISTANT:
        return False
    sentences = _sentences(turn.text)
    if any(_asks(s) for s in sentences):
        return False
    stated = [part for s in sentences for part in clauses(s) or [s] if not is_filler(part)]
    if not stated:
        return True
    if previous is None or previous.role != "user" or any(_asks(s) for s in _sentences(previous.text)):
        return False  # the user asked: a reply in their words is an answer ("Yes, Rex is allergic to chicken")
    return _stems(" ".join(stated)) <= _stems(previous.text)


def with_assistant(chunk: Chunk) -> bool:
    """Whether the chunk is a chat with an unnamed assistant (a model), not between named people."""
    return any(turn.role == "assistant" and turn.speaker == UNNAMED_ASSISTANT for turn in chunk.turns)


def _no_fact_tags(turn: Turn, previous: Turn | None, *, asks_a_model: bool) -> list[str]:
    """QUESTION_TAG or ACKNOWLEDGEMENT_TAG when the turn carries no fact of its own, else none. Only
    in a chat with a model is a question no fact: between people it tells what they talk about
    and leads to the answer (LoCoMo counts such questions as evidence)."""
    if asks_a_model and only_asks(turn.text):
        return [QUESTION_TAG]
    return [ACKNOWLEDGEMENT_TAG] if acknowledges(turn, previous) else []


def _turn_excerpts(turn: Turn, previous: Turn | None, *, asks_a_model: bool) -> list[Excerpt]:
    if not says_something(turn.text):
        return []
    tags = ["excerpt", turn.role, *_no_fact_tags(turn, previous, asks_a_model=asks_a_model)]
    passages = _passages(turn.text)
    lead = " ".join(turn.text.split()[:VECTOR_WORDS])
    context = lead_in(previous, turn)
    out: list[Excerpt] = []
    for index, passage in enumerate(passages):
        content = f"{turn.speaker}: {passage}"
        candidate = CandidateMemory(
            content=content,
            kind="episode",
            importance=1,
            tags=list(tags),
            turn_ids=[turn.id],
            valid_from=turn.timestamp,
            context=context if index == 0 else "",
        )
        own = content if turn.role == "user" else f"{turn.speaker}: {lead}"
        vector_text = " ".join(own.split()[:VECTOR_WORDS])
        out.append(Excerpt(candidate=candidate, key=f"{turn.id}\x1f{index}", vector_text=vector_text))
    return out


def turn_excerpts(chunk: Chunk) -> list[Excerpt]:
    """The excerpts of every turn of the chunk that says anything, in turn order."""
    turns, model = chunk.turns, with_assistant(chunk)
    return [
        e for i, turn in enumerate(turns) for e in _turn_excerpts(turn, turns[i - 1] if i else None, asks_a_model=model)
    ]
