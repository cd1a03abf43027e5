"""A goal reached: "we finally bought a house" retires "the user is saving up for a house".

What someone is working towards (saving for, looking for, training for, applying for, planning or
wanting to buy / get / adopt / run …), something under way that ends when it is finished (reading
Dune, building a deck), a trip ahead or a baby they are expecting is a present-tense statement that
stops being true when it is reached. An extractor marks a statement that reports reaching one with
`CandidateMemory.fulfils`: the head noun of what was reached ("bought a house in Leeds" → "home",
"got a job at Stripe" → "job", "finished Dune" → "dune", "our son was born" → "baby"), or the place
of a trip that is over ("we're back from Japan" → "japan"); `read_fulfilment` below reads it offline.
Reconcile then supersedes, by that statement, the older goal statements of the same person whose
object has the same head noun, or the trip to that place ("going to Japan in April";
`goal_object`). "Looking for a new laptop" is not reached by "bought a laptop bag" (a bag), nor
"saving for a house" by "the house needs a new roof" (no goal reached).

Invariants: pure; head nouns are lower-cased and singular ("programs" is "program"), and the nouns
of one goal are folded into one ("house", "flat" → "home"; "position" → "job").

Reading a goal reached off a first-person sentence (`read_fulfilment`, for the offline extractor):
the head noun of what the speaker (or their household) bought, found, landed, adopted, finished,
ran or got into, or gave up on; "baby" for a child born to them; or the place a trip that is over
was to; '' when the sentence reports no such thing. Not reached: a negation, a question, a
condition or a plan, and what someone else got.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["GOAL_KINDS", "goal_object", "head_noun", "noun_words", "place_word", "read_fulfilment", "words_for_goal"]

GOAL_KINDS = frozenset({"fact", "preference", "plan", "decision"})
"""The kinds a goal statement is stored as (an event is what happened, never a goal)."""

_GOAL = re.compile(
    r"\b(?:saving(?:\s+up)?(?:\s+money)?\s+for|looking\s+for|searching\s+for|shopping\s+for|hunting\s+for"
    r"|training\s+for|applying\s+(?:for|to)"
    r"|(?:planning|plans?|wants?|wanting|hoping|hopes?|trying|tries|going|aiming)\s+to\s+"
    r"(?:buy|get|find|adopt|run|finish|complete|land|purchase|open|launch|publish)"
    r"|dreaming\s+of\s+(?:buying|getting|owning|opening)"
    # something under way that ends when it is finished: "reading Dune", "building a deck"
    r"|(?:is|are|am|'m|’m|'re|’re)\s+(?:currently\s+|still\s+|now\s+)?(?:reading|re-?reading|watching|re-?watching"
    r"|playing|building|writing|knitting|sewing|renovating|restoring|halfway\s+through|working\s+(?:on|through)))"
    r"\s+(?P<what>[^,.;!?(]{1,60})"
    r"|\b(?P<hunted>house|flat|apartment|job|home)[- ]hunting\b",
    re.IGNORECASE,
)
# a trip ahead: "going to Japan in April", "flying to New York on Friday", "our trip to Kyoto"
_PLACE = r"(?:[A-Z][\w'’-]+\s+){0,2}[A-Z][\w'’-]+"
_TRIP = re.compile(
    rf"\b(?:going|heading|flying|travel+ing|driving|off)\s+to\s+(?P<place>{_PLACE})"
    rf"|\b(?:trip|holiday|vacation|visit)\s+to\s+(?P<place2>{_PLACE})"
)
# where an object's noun phrase ends: a preposition, a conjunction, a name-giver, a time word
_PHRASE_END = re.compile(
    r"\s+(?:in|at|on|for|from|to|with|near|by|of|named|called|and|but|so|because|which|that|who|when|before|after"
    r"|right(?=\s+now)|every|again"
    r"|last|this|next|yesterday|today|tomorrow|soon|now|finally|already|since|until|around|about|like|as)\b.*$",
    re.IGNORECASE,
)
_DETERMINERS = frozenset(
    "a an the my our their his her some new first own dream perfect bigger smaller better proper real".split()
)
_NOT_HEADS = frozenset("one it them something anything everything thing stuff place way".split())
# nouns that name the same goal: a home is reached by a flat as by a house, a job by a position
_SAME_GOAL = {
    "house": "home",
    "flat": "home",
    "apartment": "home",
    "condo": "home",
    "position": "job",
    "role": "job",
}
# a child on the way: "expecting our first baby", "expecting twins", "pregnant with a girl"
_EXPECTING = re.compile(
    r"\bexpecting\s+(?:(?:a|our|their|my|his|her|the|first|second|third|little|baby)\s+)*"
    r"(?:baby|babies|child|kid|twins|girl|boy)\b"
    r"|\b(?:is|are|am|'m|’m|'re|’re)\s+(?:\w+\s+)?pregnant\b",
    re.IGNORECASE,
)


def head_noun(phrase: str) -> str:
    """The head noun of a noun phrase, lower-cased and singular ("a house in Leeds" → "house",
    "PhD programs" → "program"); '' when the phrase names nothing ("a new one")."""
    words = noun_words(phrase)
    return words[-1] if words else ""


def noun_words(phrase: str, modifiers: int = 0) -> list[str]:
    """The head noun of a noun phrase (as head_noun) after up to `modifiers` of the words before it,
    lower-cased ("my dentist appointment on Friday", 1 → ["dentist", "appointment"]); [] when the
    phrase names nothing."""
    words = [w for w in re.findall(r"[\w'’-]+", _PHRASE_END.sub("", phrase.strip())) if w]
    words = [w for w in words if w.lower() not in _DETERMINERS]
    if not words:
        return []
    head = words[-1].lower().strip("'’-")
    if head in _NOT_HEADS or not head.isalpha():
        return []
    before = [w.lower().strip("'’-") for w in words[:-1][-modifiers:]] if modifiers else []
    return [w for w in before if w] + [_singular(head)]


def _singular(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    return _SAME_GOAL.get(word, word)


def place_word(place: str) -> str:
    """How a trip's place is compared: its last word, lower-cased ("New York" → "york")."""
    return place.split()[-1].lower().strip("'’-") if place.split() else ""


def words_for_goal(head: str) -> list[str]:
    """The words a store is searched with for the goals a head noun reaches ("home": home, house,
    flat, apartment, condo); [] for no head."""
    if not head:
        return []
    if head == "baby":  # a child on the way is said with these words, whatever the child is called
        return ["expecting", "pregnant"]
    return [head, *(word for word, same in _SAME_GOAL.items() if same == head)]


def goal_object(content: str) -> str:
    """The head noun of what a statement says someone is working towards ("the user is saving up
    for a house" → "home"), or the place of a trip they are going on ("going to Japan in April" →
    "japan"); '' for a statement that states no goal."""
    if _EXPECTING.search(content):
        return "baby"
    match = _GOAL.search(content)
    if match is None:
        trip = _TRIP.search(content)
        return place_word(trip.group("place") or trip.group("place2")) if trip else ""
    if match.group("hunted"):
        return _singular(match.group("hunted").lower())
    return head_noun(match.group("what"))


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
