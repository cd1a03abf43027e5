"""Who "she" or "he" is, when the speaker has named exactly one such person.

Chat names a person once ("my daughter Ines starts school in September") and then goes on with a
pronoun ("she's allergic to peanuts"). Alone, the second sentence is a fragment and was dropped:
the safety fact was lost. Here a sentence that opens with "she" or "he" gets the person back as
the speaker named them ("my daughter Ines is allergic to peanuts"), but
only where that is unambiguous: the speaker has named, in this chunk, exactly one person the
pronoun can stand for (a kin or role word, with a name or without: "my sister Maya", "our manager
Priya", "my mum's birthday"; daughter / wife / mum … are "she", son / husband / dad … are "he",
partner / friend / boss … either). Two such people, or none, or a possessive that names another
person ("my daughter's teacher"), and the sentence stays as it was (and is judged a fragment as
before).

Pure functions over the chunk's text; no state beyond what the caller keeps per speaker.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["Named", "named_people", "with_referent"]

_SHE = frozenset(
    "daughter sister wife mum mom mother girlfriend grandma grandmother granny aunt niece stepmom stepmother "
    "stepdaughter fiancee fiancée".split()
)
_HE = frozenset(
    "son brother husband dad father boyfriend grandpa grandfather uncle nephew stepdad stepfather stepson "
    "fiance fiancé".split()
)
_EITHER = frozenset(
    "partner friend boss manager colleague coworker cousin flatmate roommate neighbour neighbor".split()
)

_NAMED = re.compile(
    r"\b(?i:my|our)\s+(?i:(?:best|older|younger|little|big|eldest|oldest|youngest|new)\s+)?"
    rf"(?P<kin>{'|'.join(sorted(_SHE | _HE | _EITHER, key=len, reverse=True))})(?P<plural>s)?\b"
    r"(?:,?\s+(?P<name>[A-Z][a-z'’-]+)\b|(?P<owns>['’]s\s+(?P<owned>\w+))?)"
)
# Whom a possessive can name besides the kin it follows: "my daughter's teacher called, she said …"
# is the teacher's "she" as likely as the daughter's, so such a mention makes every pronoun ambiguous.
_PERSON_NOUN = frozenset(
    "teacher friend boss doctor partner husband wife son daughter kid kids child mum mom dad mother father sister "
    "brother colleague coach nurse vet neighbour neighbor girlfriend boyfriend fiance fiancé fiancee fiancée "
    "cousin aunt uncle grandma grandpa therapist tutor nanny manager".split()
)
_UNKNOWN: Named = ("", "?", "?")
_OPENING = re.compile(
    r"^(?P<pronoun>she|he)(?P<contraction>'s|’s)?(?=[\s,])(?P<rest>.*)$",
    re.IGNORECASE | re.DOTALL,
)
_HAS_AFTER = re.compile(r"^\s+(?:been|got|gotten|had|gone|done|taken|made|started|finished|just\s+\w+ed)\b")

Named = tuple[str, str, str]
"""(pronoun, name, phrase): a person a kin or role word named, the pronoun that can stand for them
("" either), and how the speaker named them ("my sister Maya")."""


def named_people(text: str, *, unnamed: bool = True) -> list[Named]:
    """The people a text names with a kin or role word, in order ("my sister Maya" → ("she", "Maya",
    "my sister Maya")); with `unnamed`, also those without a name ("my mum" → ("she", "my mum", "my
    mum")), which the extractor uses within one turn only: a later turn's "she" may be anyone the
    talk moved on to."""
    found: list[Named] = []
    for match in _NAMED.finditer(text):
        kin = match.group("kin").lower()
        pronoun = "she" if kin in _SHE else "he" if kin in _HE else ""
        name = match.group("name")
        if name is None and (match.group("plural") or not unnamed):
            continue  # "my sisters": not one person
        if match.group("owns") and (match.group("owned") or "").lower() in _PERSON_NOUN:
            found.append(_UNKNOWN)  # "my daughter's teacher": who "she" is cannot be told
            continue
        phrase = match.group(0)[: match.start("owns") - match.start()] if match.group("owns") else match.group(0)
        found.append((pronoun, name or phrase, phrase[0].lower() + phrase[1:]))
    return found


def with_referent(sentence: str, named: Iterable[Named]) -> str:
    """The sentence with its opening "she" / "he" replaced by the one name it can stand for among
    `named` (what the speaker named so far); unchanged when there is not exactly one."""
    opening = _OPENING.match(sentence.strip())
    if opening is None:
        return sentence
    pronoun = opening.group("pronoun").lower()
    phrases = {name: phrase for gender, name, phrase in named if gender in (pronoun, "")}  # _UNKNOWN is ""
    if len(phrases) != 1 or "?" in phrases:
        return sentence
    [phrase] = phrases.values()
    rest = opening.group("rest")
    if opening.group("contraction"):
        rest = (" has" if _HAS_AFTER.match(rest) else " is") + rest
    return phrase + rest
