"""A death: who died, so the statements about them in the present tense stop being served as current.

"Luna passed away last week" must retire "the user has a cat named Luna, she's 4", and "my dad died
in March" must retire "the user's dad lives in Ohio": otherwise the next chat asks how Luna is.
`read_death(sentence)` returns (name, noun) of the one who died: ("luna", "cat") for "my cat Luna
died", ("", "dad") for "my dad passed away", ("max", "") for "we had to put Max down", and
("", "") when the sentence reports no death of one of the speaker's people or pets.

Only a person or an animal the speaker has counts: a noun for a relative, a friend or a pet after
"my" / "our" ("my grandma", "our dog"), a capitalised name ("Luna"), or a capitalised kin word
("Grandpa died"). A phone, a laptop or a plant that "died", a character in a book, a death that
almost happened, is feared or is asked about, and someone else's relative ("my friend's dad") say
nothing. Which stored statements a death retires is reconcile's business (tap.reconcile: only
present-tense statements about the one who died, never the history).

Invariants: pure and deterministic; names and nouns are returned lower-cased.
"""

from __future__ import annotations

import re
from functools import lru_cache

from tap.deaths import KIN_AND_PETS, PEOPLE, PETS

__all__ = ["read_death"]

_NOUNS = "|".join(sorted(KIN_AND_PETS, key=len, reverse=True))
_NAME = r"[A-Z][a-z'’-]+"
# who: "my (old) dog (Rex)", "our cat Luna", "Luna", "Grandpa"
_WHO = (
    rf"(?:(?P<own>[Mm]y|[Oo]ur)\s+(?:(?:old|little|big|older|younger|elder|best|sweet|beloved|dear|first)\s+)?"
    rf"(?P<noun>{_NOUNS})(?:,?\s+(?P<name>{_NAME}))?|(?P<bare>{_NAME}))"
)
_DIED = re.compile(
    rf"{_WHO},?\s+(?:has\s+|had\s+|just\s+|finally\s+|sadly\s+|peacefully\s+)*(?:passed\s+away|passed\s+on|died)\b"
)
# "we had to put Max down", "Rex was put to sleep": of a pet only ("put the baby down for a nap")
_PUT_DOWN = re.compile(rf"\b(?:had|have)\s+to\s+put\s+{_WHO}\s+(?:down|to\s+sleep)\b(?!\s+for\b)")
_WAS_PUT_DOWN = re.compile(rf"{_WHO}\s+(?:was|got)\s+put\s+(?:down|to\s+sleep)\b(?!\s+for\b)")
# "I lost my grandma last year", "we lost our dad to cancer": of a person only (a pet can be missing)
_LOST = re.compile(
    rf"\b(?:I|we)\s+(?:just\s+|recently\s+|sadly\s+)?lost\s+{_WHO}"
    r"(?=\s+(?:to|last|this|(?:in|back\s+in)\s+(?:19|20)\d\d|two|three|a\s+(?:few|couple)|yesterday|recently)\b"
    r"|\s*[,.!;…]|\s*$)"
)
# a death that did not happen, is feared, wished away or asked about; a character's
_NOT_A_DEATH = re.compile(
    r"\b(?:almost|nearly|practically|could\s+have|would\s+have|might\s+have|may\s+have|if|when\s+will|what\s+if"
    r"|afraid|scared|worried|fear|terrified|dream(?:ed|t)?|thought|character)\b|\?",
    re.IGNORECASE,
)
# words that are capitalised but name no one ("Sadly my dog died", "Yesterday Luna died")
_NOT_A_NAME = frozenset(
    "i sadly yesterday today finally unfortunately so and but then also just last this when after before since "
    "he she it they we you everyone someone nobody".split()
)
_KIN_NAMES = frozenset("grandma grandpa granny gran nan nana nanna grandad granddad mom mum dad mama papa".split())


@lru_cache(maxsize=4096)
def read_death(sentence: str) -> tuple[str, str]:
    """(name, noun) of the one whose death the sentence reports, lower-cased; ("", "") for none."""
    for pattern, allowed in ((_DIED, KIN_AND_PETS), (_PUT_DOWN, PETS), (_WAS_PUT_DOWN, PETS), (_LOST, PEOPLE)):
        for match in pattern.finditer(sentence):
            if _NOT_A_DEATH.search(sentence[: match.end()]) or _possessed(sentence, match):
                continue
            name, noun = _who(match)
            if noun and noun not in allowed and not (pattern is _LOST and noun in _KIN_NAMES):
                continue
            if allowed is PETS and not noun and "sleep" in match.group(0):
                continue  # "had to put Emma to sleep": a child's bedtime as often as a pet's end
            if name or noun:
                return (name, noun)
    return ("", "")


def _who(match: re.Match[str]) -> tuple[str, str]:
    bare = match.group("bare")
    if bare is not None:
        word = bare.lower()
        if word in _NOT_A_NAME:
            return ("", "")
        return ("", word) if word in _KIN_NAMES else (word, "")  # "Grandpa died": the kin word
    name = match.group("name")
    return ((name or "").lower(), match.group("noun").lower())


def _possessed(sentence: str, match: re.Match[str]) -> bool:
    """Whether the one named belongs to someone else: "my friend's dog died", "Sam's cat Luna died"."""
    before = sentence[: match.start()].rstrip()
    return before.endswith(("'s", "’s")) or bool(re.search(r"(?:'s|’s)\s+(?:\w+\s+)?$", sentence[: match.start()]))
