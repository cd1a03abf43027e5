"""A thing moved to another date, set to another amount or called off, read off a sentence.

`read_new_value(sentence)` returns the head noun (after the words that tell it from others: "my
dentist appointment" → "dentist appointment") of what was rescheduled ("we moved the wedding to
September 3" → "wedding", "the launch got pushed back to May" → "launch", "standup moved to 10am"
→ "standup"), given another amount ("my doctor upped my citalopram to 40mg" → "citalopram", "they
cut my hours to 20 a week" → "hour") or called off ("the landlord cancelled Friday's meeting" →
"meeting"), for tap.new_values to retire the statement of its old value; '' when the sentence
reports no such change. Not a change: a question, a condition or a wish ("should we move the
wedding to May?", "if they cut my hours to 20", "I want to move the meeting to Friday"), a move of
a thing to a place ("we moved the couch to the bedroom": the new value must be a date or an amount,
right after "to": "moved the blog to Hugo in 2025" is a move to another tool), a person moving ("we
moved to Bristol in May"), and someone else's thing ("my brother moved his wedding to August").

Invariants: pure and deterministic.
"""

from __future__ import annotations

import re
from functools import lru_cache

from tap.goals import noun_words
from tap.new_values import states_a_value

__all__ = ["read_new_value"]

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
