"""A goal reached, read off a first-person sentence: what the speaker got ("bought a house").

`read_fulfilment(sentence)` returns the head noun of what the speaker (or their household: "we",
or no subject at all: "finished Dune last night") bought, found, landed, adopted, finished, ran or
got into ("we finally bought a house in Leeds!" → "home", "I got a job at Stripe" → "job", "I got
into a PhD program" → "program"), or gave up on ("I pulled out of the half marathon" → "marathon":
the goal ends either way); "baby" for a child born to them ("our daughter Maya was born"); or the
place a trip that is over was to ("back from Japan!" → "japan"), for tap.goals to retire the goal
it reaches; '' when the sentence reports no such thing. Not reached: a negation ("didn't get the
job"), a question, a condition or a plan ("if we buy a house", "when we get back from Japan"), and
what someone else got ("my sister bought a house").

Invariants: pure and deterministic.
"""

from __future__ import annotations

import re
from functools import lru_cache

from tap.goals import head_noun, place_word

__all__ = ["read_fulfilment"]

_REACHED = re.compile(
    r"\b(?:I|we)(?:'ve|’ve)?\s+(?:(?:just|finally|officially|actually|already|recently|have|'ve|’ve|also)\s+)*"
    r"(?:bought|purchased|found|landed|adopted|finished|completed|ran|got\s+into|got\s+accepted\s+(?:in)?to"
    r"|closed\s+on|got|signed\s+(?:for|on))\s+(?P<what>[^,.;!?]{1,60})"
    # no subject: "finished Dune last night" (not "got": "Got any tips?" asks)
    r"|^\s*(?:(?:just|finally)\s+)*(?:bought|finished|completed|adopted|landed)"
    r"\s+(?!(?:her|his|their|its)\b)(?P<what2>[^,.;!?]{1,60})(?!.*\?)",
    re.IGNORECASE,
)
# a goal given up ends it as well: "I pulled out of the half marathon", "we backed out of the house"
_GIVEN_UP = re.compile(
    r"(?:\b(?:I|we)(?:'ve|’ve|\s+have|\s+had\s+to)?\s+|^\s*)(?:(?:just|finally|officially|actually|already)\s+)*"
    r"(?:pulled\s+out\s+of|dropped\s+out\s+of|withdrew\s+from|backed\s+out\s+of|bailed\s+on|gave\s+up\s+on)"
    r"\s+(?P<what>[^,.;!?]{1,60})",
    re.IGNORECASE,
)
_NOT_REACHED = re.compile(
    r"\b(?:not|never|didn'?t|didn’t|haven'?t|haven’t|hasn'?t|if|unless|when\s+we|once\s+we|will|'ll|’ll|might"
    r"|could|would|should|hope|hoping|want|wanted|almost|nearly)\b|\?",
    re.IGNORECASE,
)
# "got" reaches only a thing one works for, not a state or a happening ("got sick", "got home")
_NOT_GOT = frozenset(
    "sick ill home back up lost stuck married engaged divorced promoted fired laid dumped better worse used bored "
    "tired hurt caught told asked called paid lucky ready done".split()
)


# a child born to the speaker: "our daughter Maya was born last week", "we had the baby", "I gave birth"
_KID = r"(?:baby|son|daughter|girl|boy|twins|child|kid|little\s+one)"
_BORN = re.compile(
    rf"\b(?:my|our)\s+(?:(?:baby|little|newborn|first|second|third|new)\s+)*{_KID}(?:\s+[A-Z][\w'’-]+)?"
    r"\s+(?:was|were|has\s+been|have\s+been)\s+(?:finally\s+|just\s+)?born\b"
    r"|\b(?:I|we)(?:'ve|’ve|\s+have)?\s+(?:just\s+|finally\s+)?(?:had|welcomed)\s+(?:(?:the|our|a)\s+)?"
    rf"(?:(?:baby|little|newborn|first|second|third|new|healthy)\s+)*{_KID}\b"
    r"|\bI\s+(?:just\s+|finally\s+)?gave\s+birth\b",
    re.IGNORECASE,
)
_NOT_BORN = re.compile(r"\b(?:when|once|after|before|until|till|by\s+the\s+time)\b", re.IGNORECASE)

# a trip that is over: "back from Japan!", "we just got back from our trip to New York"
_BACK_FROM = re.compile(
    r"(?:^|\b(?:I'm|I’m|I am|we're|we’re|we are|I|we|just|finally|got|am|are|arrived)\s+)(?:just\s+|finally\s+)?"
    r"(?:got\s+)?(?:back|home|returned)\s+(?:home\s+)?from\s+"
    r"(?:(?:our|my|the|a)\s+(?:\w+\s+)?(?:trip|holiday|vacation|week|weekend|visit)\s+(?:to|in)\s+)?"
    r"(?P<place>(?:[A-Z][\w'’-]+\s+){0,2}[A-Z][\w'’-]+)"
)


@lru_cache(maxsize=4096)
def read_fulfilment(sentence: str) -> str:
    """The head noun of the goal the sentence reports reached, or the place of a trip that is over
    ('' for none; see the module docstring)."""
    born = _BORN.search(sentence)
    before_birth = sentence[: born.start()] if born is not None else ""
    if born is not None and not (_NOT_REACHED.search(before_birth) or _NOT_BORN.search(before_birth)):
        return "baby"
    back = _BACK_FROM.search(sentence)
    if back is not None and not _NOT_REACHED.search(sentence[: back.start("place")]):
        return place_word(back.group("place"))
    match = _REACHED.search(sentence) or _GIVEN_UP.search(sentence)
    if match is None:
        return ""
    start = match.start("what2") if match.groupdict().get("what2") else match.start("what")
    if _NOT_REACHED.search(sentence[:start]):
        return ""
    what = match.groupdict().get("what2") or match.group("what")
    first = what.split()[0].lower() if what.split() else ""
    if re.search(r"\bgot\s+$", sentence[:start], re.IGNORECASE) and first in _NOT_GOT:
        return ""
    return head_noun(what)
