"""A statement about the user in the third person, as the user would say it: "The user lives in
Berlin" → "I live in Berlin", "The user's sister Ana lives in Madrid" → "My sister Ana lives in
Madrid", "User no longer eats meat" → "I no longer eat meat".

Agents write what they keep about the user in the third person; the offline rules
(tap.language.rules) read what users say of themselves. Only the subject and its verb change: a
sentence about anyone else is left alone (None).
"""

from __future__ import annotations

import re

_SUBJECT = re.compile(r"^\s*(?:the\s+)?user(?P<possessive>'s)?\s+(?P<rest>\S.*)$", re.IGNORECASE | re.DOTALL)
_IRREGULAR = {"is": "am", "has": "have", "does": "do", "isn't": "am not", "doesn't": "don't", "hasn't": "haven't"}
_ADVERBS = frozenset(
    "no longer never always usually often also now still recently just sometimes rarely mostly only".split()
)
_SIBILANT_ES = ("sses", "shes", "ches", "xes", "zes", "oes")


def base_form(word: str) -> str:
    """A verb's base form from its third-person singular ("lives" → "live", "tries" → "try");
    any other word as it is (a past tense, a modal)."""
    lower = word.lower()
    if lower in _IRREGULAR:
        return _IRREGULAR[lower]
    if lower.endswith("ies") and len(lower) > 4:
        return word[:-3] + "y"
    if lower.endswith(_SIBILANT_ES):
        return word[:-2]
    if lower.endswith("s") and not lower.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def as_first_person(text: str) -> str | None:
    """The statement as the user would say it, or None when it is not about "the user"."""
    found = _SUBJECT.match(text)
    if found is None:
        return None
    rest = found["rest"]
    if found["possessive"]:
        return "My " + rest
    words = rest.split(" ")
    index = 0
    while index < len(words) - 1 and words[index].lower() in _ADVERBS:
        index += 1
    words[index] = base_form(words[index])
    return "I " + " ".join(words)
