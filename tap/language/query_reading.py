"""What a recall query asks for, read from its English wording: the present state of something,
its history, several facts gathered together, a span of time, or what the assistant said earlier;
and the words memories name the members of a group by, for the lexical search (`with_members`).

Recall (tap.recall.engine) turns a `QueryReading` into how far older candidates may fall behind
the newest one and how much an assistant's excerpt weighs; the wording lives here so the recall
stage carries no English word lists. Pure functions, no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "QueryReading",
    "asks_about_assistant",
    "asks_for_current",
    "asks_in_present",
    "read_query",
    "with_members",
]

_CURRENT = re.compile(
    r"\b(?:now|currently|current|these days|nowadays|latest|most recent|most recently|recently|still|anymore"
    r"|any more|at the moment|right now|today|new|newest|last)\b",
    re.IGNORECASE,
)
_QUESTION = re.compile(
    r"\?|^\W*(?:what|what's|which|who|who's|whose|where|where's|when|how|is|are|am|do|does|did|can|could|will|has"
    r"|have|was|were|had)\b",
    re.IGNORECASE,
)
_AUXILIARY = re.compile(
    r"\b(?:is|are|am|do|does|has|have|can|will|should|did|was|were|had)\b|(?<=[a-z])['’]s\b|\bused to\b",
    re.IGNORECASE,
)
_PAST_AUXILIARIES = frozenset({"did", "was", "were", "had", "used to"})
_AGGREGATE = re.compile(
    r"\b(?:total|in total|combined|altogether|in all|across|all (?:the|my|of)|average|sum|difference|compared"
    r"|more than|less than|fewer than|each|both|between)\b",
    re.IGNORECASE,
)
_ASKS_ASSISTANT = re.compile(
    r"\byou(?:'ve)?\s+(?:\w+\s+){0,2}?(?:said|mentioned|recommended|suggested|provided|told|gave|listed|explained"
    r"|described|shared|wrote|proposed|offered|came up with)\b|\bdid you\b|\bremind me\b"
    r"|\bwe\s+(?:\w+\s+){0,2}?(?:discussed|talked|covered|went over)\b"
    r"|\b(?:our|the|that|your)\s+(?:\w+\s+)?(?:previous|last|earlier|past|other)\s+(?:conversation|chat|discussion|session)",
    re.IGNORECASE,
)
_HISTORY = re.compile(
    r"\b(?:initially|originally|at first|earliest|in order|the order|previously|used to|before I|prior to)\b",
    re.IGNORECASE,
)
_SPAN = re.compile(r"\b(?:how long|since|first|before|after|ago)\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class QueryReading:
    """What a query says it asks for (each field: the query's wording says so)."""

    history: bool
    """The order or first value of something ("where did I initially …", "in what order …")."""
    current: bool
    """The present state of something ("where do I live now?", "what's my latest …")."""
    gathers: bool
    """Several facts together or every mention of one ("how many … in total", "compared to")."""
    spans_time: bool
    """A span of time, whose start counts ("how long have I …", "since …")."""
    present: bool
    """A question in the present tense ("which editor does the user use?"); the past asks for history."""
    about_assistant: bool
    """What the assistant said earlier ("which hotel did you recommend?", "in our previous chat …")."""


def read_query(query: str) -> QueryReading:
    """What the query asks for, by its wording."""
    return QueryReading(
        history=_HISTORY.search(query) is not None,
        current=asks_for_current(query),
        gathers=_AGGREGATE.search(query) is not None,
        spans_time=_SPAN.search(query) is not None,
        present=asks_in_present(query),
        about_assistant=asks_about_assistant(query),
    )


def asks_for_current(query: str) -> bool:
    """Whether the query says it asks for the present state of something ('where do I live now?',
    'what's my latest …')."""
    return _CURRENT.search(query) is not None


def asks_in_present(query: str) -> bool:
    """Whether the query is a question in the present tense ('which editor does the user use?',
    'what is my cat called?'); one in the past tense ('where did I go …', 'what was …') asks for
    history."""
    if _QUESTION.search(query) is None:
        return False
    first = _AUXILIARY.search(query)
    return first is not None and first.group(0).lower() not in _PAST_AUXILIARIES


def asks_about_assistant(query: str) -> bool:
    """Whether the question asks what the assistant said earlier ("which hotel did you recommend?",
    "remind me of the list you gave me", "in our previous chat …")."""
    return _ASKS_ASSISTANT.search(query) is not None


# A word for a group of people or animals and the words memories name its members by: "do I have
# kids?" must find "the user's daughter Asha was born on June 3rd", which MiniLM puts at cosine 0.05
# and BM25 cannot match.
_MEMBERS = {
    "kids": "son daughter",
    "kid": "son daughter",
    "children": "son daughter",
    "child": "son daughter",
    "family": "wife husband partner son daughter mom dad mother father sister brother parents",
    "parents": "mom dad mother father",
    "siblings": "sister brother",
    "spouse": "wife husband",
    "pets": "dog cat",
    "pet": "dog cat",
}
_GROUP = re.compile(r"\b(?:" + "|".join(_MEMBERS) + r")\b", re.IGNORECASE)


def with_members(lexical: str) -> str:
    """The lexical query with the members of each group it names added ("kids" → son, daughter)."""
    added = [_MEMBERS[m.group(0).lower()] for m in _GROUP.finditer(lexical)]
    return " ".join([lexical, *dict.fromkeys(added)]) if added else lexical
