"""A new value for a thing: "we moved the wedding to September 3" retires "the wedding is on June 12".

Some updates name neither a slot tap knows nor words they take back: they say that a named thing
now has another date or another amount ("we pushed the launch to May", "my doctor upped my
citalopram to 40mg", "they cut my hours to 20 a week"), or none ("the landlord cancelled Friday's
meeting"). An extractor marks such a statement with `CandidateMemory.new_value`: the words of the
thing, head noun last (`read_new_value` below reads it offline). Reconcile then supersedes, by that
statement, the older statements of the same person that name the thing (every one of its words:
"my dentist appointment" is not "the team meeting") and state a value for it (a number, a month or
a weekday): "the wedding is on June 12 in Lisbon", "takes 20mg of citalopram every morning". A
statement about the thing that states no value ("my sister is the maid of honour at the wedding")
stays, and so does an event ("we booked the venue for the wedding on May 2"): what happened is
history.

Invariants: pure; the words are lower-cased, the head noun singular.

Reading a new value off a sentence (`read_new_value`, for the offline extractor): the words of what
was rescheduled, given another amount or called off, head noun last ("we moved the wedding to
September 3" → "wedding", "my doctor upped my citalopram to 40mg" → "citalopram"); '' when the
sentence reports no such change. Not a change: a question, a condition or a wish, a move of a thing
to a place or to another tool, a person moving, and someone else's thing.
"""

from __future__ import annotations

import re
from functools import lru_cache

from tap.language.goal import GOAL_KINDS, noun_words

__all__ = ["VALUE_KINDS", "read_new_value", "states_a_value"]

VALUE_KINDS = GOAL_KINDS
"""The kinds a statement of a thing's current value is stored as, as a goal's (an event is history)."""

_VALUE = re.compile(
    r"\d"
    r"|\b(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sept?(?:ember)?"
    r"|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?|(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)days?)\b"
    r"|\b(?i:noon|midnight|tomorrow|spring|summer|autumn|winter)\b"
)


def states_a_value(content: str) -> bool:
    """Whether a statement gives a date, a time or an amount (a digit, a month, a weekday)."""
    return _VALUE.search(content) is not None


_OWNER = r"(?:the|my|our|this|that)"  # the speaker's thing or one both know ("moved his wedding": another's)
_MOVED = r"(?:moved|pushed(?:\s+back)?|postponed|rescheduled|delayed|brought\s+forward|bumped|shifted|changed)"
_RESCHEDULED = re.compile(
    r"\b(?:moved|pushed|postponed|rescheduled|delayed|brought|bumped|shifted|changed|put\s+off|pushed\s+back)"
    rf"\s+{_OWNER}\s+(?P<what>[\w'’ -]{{1,40}}?)\s+(?:back\s+|forward\s+|up\s+)?(?:to|till|until)"
    r"\s+(?P<to>[^,.;!?]{1,40})"
    # "the launch got pushed back to May", "standup moved to 10am": the thing as the subject
    rf"|(?:^\s*|\b{_OWNER}\s+)(?P<what2>[\w'’ -]{{1,40}}?)\s+(?:(?:was|is|has\s+been|got|'s|’s)\s+(?:been\s+)?)?"
    rf"{_MOVED}\s+(?:to|till|until)\s+(?P<to2>[^,.;!?]{{1,40}})",
    re.IGNORECASE,
)
# a thing with a date called off: "the landlord cancelled Friday's meeting", "we called off the party"
_CANCELLED = re.compile(
    r"\b(?:cancelled|canceled|called\s+off|scrapped)\s+(?:(?:the|my|our|this|that|tomorrow['’]s|tonight['’]s"
    r"|\w+day['’]s|next\s+week['’]s)\s+)(?P<what>[\w'’ -]{1,40}?)\s*(?:[,.;!?]|$|\s+(?:with|for|at|on)\b)"
    r"|(?:^\s*|\b(?:the|my|our|this|that)\s+)(?P<what2>[\w'’ -]{1,40}?)\s+(?:was|is|has\s+been|got)\s+"
    r"(?:cancelled|canceled|called\s+off|scrapped)\b",
    re.IGNORECASE,
)
_NEW_AMOUNT = re.compile(
    r"\b(?:upped|increased|raised|lowered|reduced|cut|dropped|decreased|bumped|changed|adjusted|doubled|halved)"
    rf"\s+{_OWNER}\s+(?:dose\s+of\s+|dosage\s+of\s+)?(?P<what>[\w'’-]+(?:\s+[\w'’-]+)?)"
    r"\s+(?:dose\s+|dosage\s+)?(?:up\s+|down\s+|back\s+)?to\s+(?P<to>\d[^,.;!?]{0,30})"
    rf"|\b{_OWNER}\s+(?P<what2>[\w'’-]+(?:\s+[\w'’-]+)?)\s+(?:was|is|has\s+been|got|'s|’s)\s+(?:been\s+)?"
    r"(?:upped|increased|raised|lowered|reduced|cut|dropped|decreased|bumped|changed|adjusted|doubled|halved)"
    r"\s+(?:up\s+|down\s+|back\s+)?to\s+(?P<to2>\d[^,.;!?]{0,30})",
    re.IGNORECASE,
)
_NOT_DONE = re.compile(
    r"\b(?:not|never|didn'?t|didn’t|won'?t|won’t|if|unless|whether|should|could|would|might|may|want|wants"
    r"|wanted|hope|hoping|thinking|considering|plan|planning|going\s+to|gonna|trying|asked\s+to)\b",
    re.IGNORECASE,
)


_NOT_THINGS = frozenset("i we you he she they us them someone everyone thing".split())  # "we moved to 5th Ave"


@lru_cache(maxsize=4096)
def read_new_value(sentence: str) -> str:
    """The thing moved to a new date, set to a new amount or called off: its head noun after up to
    two words before it ("my dentist appointment" → "dentist appointment"), '' for none (see the module docstring)."""
    for pattern in (_RESCHEDULED, _NEW_AMOUNT, _CANCELLED):
        match = pattern.search(sentence)
        if match is None or _NOT_DONE.search(sentence[: match.start()]) or "?" in sentence:
            continue
        what = match.group("what") or match.groupdict().get("what2") or ""
        if pattern is not _CANCELLED:  # a cancelled thing has no new value: its old one ends all the same
            to = match.group("to") or match.groupdict().get("to2") or ""
            if not states_a_value(" ".join(to.split()[:2])) or re.search(r"\bfrom\b", what, re.IGNORECASE):
                continue  # "moved the blog from Jekyll to Hugo in 2025": another tool, not another date
        words = noun_words(what, modifiers=2)
        if words and words[-1] not in _NOT_THINGS:
            return " ".join(words)
    return ""
