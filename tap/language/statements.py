"""Reading stored statements' English wording, for reconciling a new statement with older ones
(tap.extract.reconcile): whom a statement is about, whether it is negated, the values and names it
states, the thing of the user's it is about, the user's person it names, the version it gives of
a tool, and the content words two statements share.

Statements are the extractors' normalised third-person sentences ("the user's rent is $1700 a
month"), so these readings look at their opening words and typed values. Pure functions, no I/O.
"""

from __future__ import annotations

import re

__all__ = [
    "kin_named",
    "names",
    "negated",
    "polarity_free_words",
    "same_possession",
    "shares_a_word",
    "subject_family",
    "subject_key",
    "takes_up_new_value",
    "value_changed",
    "version_after",
    "words",
]

_WORD = re.compile(r"[^\W_]+")


def words(text: str) -> list[str]:
    """The lower-cased words of a text, split at anything not a letter or digit ("doesn't": "doesn", "t")."""
    return [w.lower() for w in _WORD.findall(text)]


_TIME_OPENERS = frozenset("nowadays now currently lately recently".split())


def subject_key(content: str) -> str:
    """Whom a statement is about, by its opening words: 'the user', "the user's sister", 'atlas'
    (after a time word it opens with: "These days the user sleeps …" is about the user)."""
    found = words(content)
    while len(found) > 2 and (found[0] in _TIME_OPENERS or found[:2] == ["these", "days"]):
        found = found[2:] if found[:2] == ["these", "days"] else found[1:]
    found = found[:4]
    if found[:2] == ["the", "user"]:
        return "the user" if len(found) < 3 or found[2] != "s" else f"the user's {found[3] if len(found) > 3 else ''}"
    return found[0] if found else ""


def subject_family(content: str) -> str:
    """'self' for the user, their things and their team; otherwise the subject's opening word."""
    subject = subject_key(content)
    opening = " ".join(words(content)[:6])  # "These days the user runs …"
    if subject.startswith("the user") or subject in ("the", "we", "our") or "the user" in opening:
        return "self"
    return subject


_NEGATION = re.compile(r"\b(?:not|never|no longer)\b|n['’]t\b", re.IGNORECASE)
# as `words` splits them: "doesn't" is "doesn" and "t"
_POLARITY_WORDS = frozenset(
    "not never no longer don doesn isn aren didn wasn weren t actually turns out anymore".split()
)


def negated(content: str) -> bool:
    """Whether a statement is negated ("does not", "never", "no longer", "isn't")."""
    return _NEGATION.search(content) is not None


def polarity_free_words(content: str) -> set[str]:
    """A statement's words without the ones that only say whether it holds ("not", "actually", "anymore")."""
    return set(words(content)) - _POLARITY_WORDS


_POSSESSION = re.compile(r"^the user's\s+((?:[a-z-]+\s+){0,2}?[a-z-]+)\s+(?:is|are|was|were|changed|has|have)\b")


def same_possession(new: str, old: str, *, whole: bool = False) -> bool:
    """Whether both statements are about the same thing of the user's, by its head noun: "the user's
    thesis topic changed to …" and "the user's topic is …" (the last word before the verb); with
    `whole`, by every word of it ("research topic" and "research topic")."""
    a, b = _POSSESSION.match(new.lower()), _POSSESSION.match(old.lower())
    if not (a and b):
        return False
    return a.group(1) == b.group(1) if whole else a.group(1).split()[-1] == b.group(1).split()[-1]


_COMMON = (
    frozenset(
        "the and for with from that this now user user's they their them our are was were has have had will "
        "same time every each on at in of to".split()
    )
    | {f"{d}day" for d in ("mon", "tues", "wednes", "thurs", "fri", "satur", "sun")}
    | {f"{d}days" for d in ("mon", "tues", "wednes", "thurs", "fri", "satur", "sun")}
)


def shares_a_word(a: str, b: str) -> bool:
    """Whether two statements share a content word besides the subject and typed values."""

    def content_words(text: str) -> set[str]:
        return {w for w in words(text) if len(w) > 2 and w not in _COMMON} | {w for w in words(text) if w[:1].isdigit()}

    return bool(content_words(a) & content_words(b))


_TYPED_VALUES: tuple[re.Pattern[str], ...] = (
    re.compile(r"\b(?:mon|tues|wednes|thurs|fri|satur|sun)days?\b", re.IGNORECASE),  # a weekday
    re.compile(r"[£$€¥]\s?\d[\d,.]*|\b\d[\d,.]*\s?(?:euros?|dollars?|pounds?|usd|eur|gbp)\b", re.IGNORECASE),  # money
    re.compile(r"\b\d{1,2}(?::\d{2})?\s?(?:am|pm)\b|\b\d{1,2}:\d{2}\b", re.IGNORECASE),  # a time of day
)


def value_changed(new: str, old: str) -> bool:
    """Whether a change statement gives another value of a kind the older one states: another
    weekday ("moves to wednesdays" after "meets the 2nd thursday"), another amount ("£25 now" after
    "£20 for the year") or another time of day."""
    for pattern in _TYPED_VALUES:
        now = {_typed(v) for v in pattern.findall(new)}
        before = {_typed(v) for v in pattern.findall(old)}
        if now and before and not now & before:
            return True
    return False


def _typed(value: str) -> str:
    """A typed value as compared: lower case, no spaces, a weekday without its plural."""
    value = "".join(value.lower().split())
    return value[:-1] if value.endswith("days") else value


_NAME = re.compile(r"(?:^|(?<=\s))[A-Z][a-z]{2,}\b")
_NOT_NAMES = frozenset(
    {"The", "User", "This", "That", "These", "Those", "Standing", "Asked", "New", "Our", "His", "Her"}
)


def names(content: str) -> set[str]:
    """Capitalised words of a statement: the people, places, pets and projects it names ('Ava',
    'Atlas', 'Oakhurst'); the opening word counts too (a statement may open with a name), the usual
    sentence openers do not."""
    return set(_NAME.findall(content)) - _NOT_NAMES


def kin_named(content: str, name: str) -> bool:
    """Whether a statement is about one of the user's people called `name` ("the user's son Leo
    plays soccer" for "leo"): "Leo quit soccer" takes back what was said of him by relation."""
    if name in ("", "self"):
        return False
    return re.match(rf"^the user's\s+(?:[a-z-]+\s+){{1,2}}{re.escape(name)}\b", content, re.IGNORECASE) is not None


def version_after(content: str, tool: str) -> str:
    """The version a statement gives right after a tool's name ("Python 3.12", "Node to 20"), or ''."""
    if not tool:
        return ""
    found = re.search(rf"\b{re.escape(tool)}(?:\s+to)?\s*v?(\d+(?:\.\d+)*)\b", content, re.IGNORECASE)
    return found.group(1) if found else ""


_TAKES_UP = re.compile(
    r"\b(?:joined|join|joining|started (?:at|with|working)|starts (?:at|with)|hired|signed with|accepted"
    r"|new (?:job|role|employer|company|position)|moved to|switched to|went to work"
    r"|(?:got|took|landed) (?:the|a|an) (?:[\w'’.&-]+ )?(?:job|offer|position|role))\b",
    re.IGNORECASE,
)


def takes_up_new_value(content: str) -> bool:
    """Whether a statement says a new value was taken up ("joined Stripe", "started at Stripe", "got
    the Klarna job"): a change, not a second value held beside the old one."""
    return _TAKES_UP.search(content) is not None
