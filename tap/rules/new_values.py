"""A thing moved to another date or set to another amount, read off a sentence.

`read_new_value(sentence)` returns the head noun of what was rescheduled ("we moved the wedding to
September 3" → "wedding", "the launch got pushed back to May" → "launch") or given another amount
("my doctor upped my citalopram to 40mg" → "citalopram", "they cut my hours to 20 a week" →
"hour"), for tap.new_values to retire the statement of its old value; '' when the sentence reports
no such change. Not a change: a question, a condition or a wish ("should we move the wedding to
May?", "if they cut my hours to 20", "I want to move the meeting to Friday"), and a move of a thing
to a place ("we moved the couch to the bedroom": the new value must be a date or an amount), and
someone else's thing ("my brother moved his wedding to August"); the new value is what follows
"to" at once ("moved the blog to Hugo in 2025" is a move to another tool).

Invariants: pure and deterministic.
"""

from __future__ import annotations

import re
from functools import lru_cache

from tap.goals import head_noun
from tap.new_values import states_a_value

__all__ = ["read_new_value"]

_OWNER = r"(?:the|my|our|this|that)"  # the speaker's thing or one both know ("moved his wedding": another's)
_RESCHEDULED = re.compile(
    r"\b(?:moved|pushed|postponed|rescheduled|delayed|brought|bumped|shifted|changed|put\s+off|pushed\s+back)"
    rf"\s+{_OWNER}\s+(?P<what>[\w'’ -]{{1,40}}?)\s+(?:back\s+|forward\s+|up\s+)?(?:to|till|until)"
    r"\s+(?P<to>[^,.;!?]{1,40})"
    rf"|\b{_OWNER}\s+(?P<what2>[\w'’ -]{{1,40}}?)\s+(?:was|is|has\s+been|got|'s|’s)\s+(?:been\s+)?"
    r"(?:moved|pushed(?:\s+back)?|postponed|rescheduled|delayed|brought\s+forward|bumped|shifted|changed)"
    r"\s+(?:to|till|until)\s+(?P<to2>[^,.;!?]{1,40})",
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
    r"|wanted|hope|hoping|thinking|considering|plan|planning|going\s+to|gonna|might|trying|asked\s+to)\b|\?",
    re.IGNORECASE,
)


@lru_cache(maxsize=4096)
def read_new_value(sentence: str) -> str:
    """The head noun of the thing moved to a new date or set to a new amount ('' for none; see the
    module docstring)."""
    for pattern in (_RESCHEDULED, _NEW_AMOUNT):
        match = pattern.search(sentence)
        if match is None or _NOT_DONE.search(sentence[: match.start()]) or "?" in sentence:
            continue
        what = match.group("what") or match.groupdict().get("what2") or ""
        to = match.group("to") or match.groupdict().get("to2") or ""
        if not states_a_value(" ".join(to.split()[:2])) or re.search(r"\bfrom\b", what, re.IGNORECASE):
            continue  # "moved the blog from Jekyll to Hugo in 2025": another tool, not another date
        head = head_noun(what)
        if head:
            return head
    return ""
