"""The free heuristic gate: does a chunk carry anything worth remembering?

`heuristic_signals(text)` names the cheap signals found in a text, each by a regular expression:
strong ones say something about a person or a project (commitment, plan, preference, decision,
instruction, self-statement, personal event) and weak ones make a statement concrete (named entity,
date or time, number with a unit, contact detail). `heuristic_gate(chunk)` scores every turn
(strong signal 3 points, weak signal 1, each counted once per turn) and passes the chunk when the
total reaches `min_score` (3 by default): one strong signal is enough, weak ones need three points
between them. Chit-chat ("hi", "thanks!", "ok cool") scores 0 and "Thanks, Priya! See you Monday"
(a name and a day) scores 2, so both fail.

Invariants: pure, deterministic, no model calls; the signal names are stable strings (they are
used as reasons, and tap.language.rules reuses the patterns and names as tags).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import msgspec

from tap.ingest.chunker import Chunk

__all__ = [
    "GateDecision",
    "MONTHS",
    "STRONG",
    "WEAK",
    "WEEKDAYS",
    "heuristic_gate",
    "heuristic_signals",
    "named_entities",
    "signal_score",
]

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MONTHS = tuple("january february march april may june july august september october november december".split())
_I = r"\b(?:I|i)"
_IM = r"\b(?:I'm|I’m|i'm|I am|i am)"

_WEEKDAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
# "May" is only a month next to a number or a time preposition ("in May", "May 5").
_MONTH = (
    r"(?:January|February|March|April|June|July|August|September|October|November|December"
    r"|(?:in|since|until|last|next|this|early|late|mid-?) May|May \d{1,2}\b|\d{1,2}(?:st|nd|rd|th)? May)"
)

STRONG: dict[str, re.Pattern[str]] = {
    "commitment": re.compile(
        rf"{_I}(?:'ll|’ll| will| promise| shall)\b|{_IM} (?:going to|gonna|committed to)\b"
        r"|\bI(?:'m|’m| am)? (?:planning|plan|intend|aim) to\b|\bgonna\b",
        re.IGNORECASE,
    ),
    "plan": re.compile(
        r"\b(?:plan(?:ning)? to|going to|hoping to|hope to|want to|about to|looking forward to"
        r"|next (?:week|month|year|weekend|summer|spring|fall|autumn|winter|" + _WEEKDAY + r")"
        r"|tomorrow|upcoming|scheduled)\b",
        re.IGNORECASE,
    ),
    "preference": re.compile(
        rf"{_I}(?: really| absolutely| just| also| totally)? (?:like|love|loved|hate|prefer|enjoy|adore"
        r"|dislike|can't stand|can’t stand)\b|\bfavou?rite\b|\b(?:a |big |huge )?fan of\b"
        rf"|{_IM} (?:into|keen on|passionate about|allergic to)\b|\bprefer(?:s|red)?\b",
        re.IGNORECASE,
    ),
    "decision": re.compile(
        r"\blet'?s (?:use|go with|switch|pick|stick|keep|try|do|move|adopt|drop)\b|\blet’s (?:use|go with)\b"
        r"|\b(?:we|I)(?:'ve| have)? (?:decided|agreed|chose|settled on|picked|opted)\b"
        r"|\bwe(?:'ll| will) (?:go with|use|switch|stick)\b|\bdecided to\b|\bdecision\b",
        re.IGNORECASE,
    ),
    "instruction": re.compile(
        r"^(?:please )?(?:always|never|don't ever|do not ever|remember|make sure|from now on|call me"
        r"|avoid|answer|reply|respond|use|write)\b|\bfrom now on\b|\bremember (?:that|to)\b"
        r"|\b(?:always|never) (?:answer|reply|respond|use|write|call|say|mention|include)\b",
        re.IGNORECASE | re.MULTILINE,
    ),
    "self_statement": re.compile(
        rf"{_IM} (?:a|an|the|from|married|single|divorced|retired|pregnant|engaged|\d+)\b"
        rf"|{_I} (?:work|live|grew up|was born|study|studied|teach|own|have (?:a|an|two|three|\d+)"
        r"|used to|volunteer|run|moved)\b|\bmy (?:wife|husband|partner|boyfriend|girlfriend|kids?"
        r"|children|son|daughter|mom|mum|mother|dad|father|parents|brother|sister|family|friend|boss"
        r"|job|name|dog|cat|pet|birthday|home|house|team|company|project|car)\b|\bmy name is\b",
        re.IGNORECASE,
    ),
    "event": re.compile(
        rf"{_I}(?:'ve| have| just| finally| recently| also)* (?:went|got|made|took|saw|met|ran|began|bought"
        r"|gave|found|won|wrote|read|built|left|lost|became|came|started|finished|visited|joined|moved"
        r"|attended|adopted|signed|graduated|married|travel+ed|painted|tried|learned|learnt|launched"
        r"|shipped|passed|spent|celebrated|volunteered)\b|\bshares? (?:a )?photo\b",
        re.IGNORECASE,
    ),
}

WEAK: dict[str, re.Pattern[str]] = {
    "date": re.compile(
        r"\b(?:yesterday|today|tonight|tomorrow|recently|ago|the other day|weekend)\b"
        rf"|\b(?:last|next|this|every) (?:week|month|year|summer|spring|fall|autumn|winter|{_WEEKDAY})\b"
        rf"|\b{_WEEKDAY}s?\b|\b{_MONTH}|\b(?:19|20)\d{{2}}\b|\b\d{{4}}-\d{{2}}-\d{{2}}\b"
        r"|\b\d{1,2}/\d{1,2}(?:/\d{2,4})?\b|\b\d{1,2}(?::\d{2})? ?(?:am|pm)\b|\b\d{1,2}:\d{2}\b",
        re.IGNORECASE,
    ),
    "quantity": re.compile(
        r"[$€£¥]\s?\d|\b\d+(?:[.,]\d+)?\s?(?:%|percent|k|m|bn|km|mi|miles?|kg|kgs|lbs?|pounds?|g|mg|ml|l"
        r"|liters?|litres?|years?|yrs?|months?|weeks?|days?|hours?|hrs?|minutes?|mins?|seconds?|secs?"
        r"|dollars?|euros?|usd|eur|gbp|gb|mb|tb|ms|cm|mm|m²|sq ?ft|ft|feet|inch(?:es)?|people|kids"
        r"|times|x)\b",
        re.IGNORECASE,
    ),
    "contact": re.compile(
        r"\b[\w.+-]+@[\w-]+\.[\w.]+\b|\bhttps?://\S+|\+\d[\d ()-]{7,}\d|\(\d{3}\) ?\d{3}-\d{4}"
        r"|\b\d{3}[-. ]\d{3}[-. ]\d{4}\b"
    ),
}

_ENTITY_WORD = re.compile(r"\b([A-Z][a-zA-Z'’-]*[a-z][a-zA-Z]*|[A-Z]{2,}[0-9]*)\b")
_NOT_ENTITIES = frozenset(
    "I I'm I’m I'll I've I'd OK Ok Okay Yes No Yeah Hey Hi Hello Thanks Thank Wow Oh Ah Lol LOL Haha "
    "Mr Mrs Ms Dr The A An And But So".split()
    + [name.title() for name in (*WEEKDAYS, *MONTHS)]  # dates are the "date" signal, not entities
)
_SENTENCE_START = re.compile(r"(?:^|[.!?…:]\s+|\n\s*)[\"“'(\[]?([A-Za-z'’]+)")

STRONG_WEIGHT = 3
WEAK_WEIGHT = 1
DEFAULT_MIN_SCORE = 3


class GateDecision(msgspec.Struct, frozen=True, kw_only=True):
    """The verdict on a chunk and the signals that led to it."""

    passed: bool
    reasons: list[str]


def named_entities(text: str) -> list[str]:
    """Capitalised words and acronyms that do not open a sentence (a cheap NER stand-in)."""
    starts = {m.start(1) for m in _SENTENCE_START.finditer(text)}
    found: list[str] = []
    for match in _ENTITY_WORD.finditer(text):
        word = match.group(1)
        if match.start(1) in starts or word in _NOT_ENTITIES or word in found:
            continue
        found.append(word)
    return found


def heuristic_signals(text: str) -> list[str]:
    """The names of the signals present in `text`, strong ones first, each named once."""
    names = [name for name, pattern in STRONG.items() if pattern.search(text)]
    names += [name for name, pattern in WEAK.items() if pattern.search(text)]
    if named_entities(text):
        names.append("entity")
    return names


def signal_score(signals: Iterable[str]) -> int:
    """Points for one text's signals: strong 3 each, weak 1 each."""
    return sum(STRONG_WEIGHT if name in STRONG else WEAK_WEIGHT for name in set(signals))


def heuristic_gate(chunk: Chunk, *, min_score: int = DEFAULT_MIN_SCORE) -> GateDecision:
    """Pass the chunk when its turns' signals add up to `min_score` points."""
    score = 0
    reasons: list[str] = []
    for turn in chunk.turns:
        signals = heuristic_signals(turn.text)
        score += signal_score(signals)
        reasons += [name for name in signals if name not in reasons]
    if score < min_score:
        return GateDecision(passed=False, reasons=[f"score {score} < {min_score}", *reasons])
    return GateDecision(passed=True, reasons=reasons)
