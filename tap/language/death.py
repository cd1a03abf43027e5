"""Which stored statements a death retires: the present-tense ones about the one who died.

An extractor marks a statement that reports a death with `CandidateMemory.deceased` = [name, noun]
("Luna passed away" → ["luna", ""], "my dad died" → ["", "dad"], "my cat Luna died" → ["luna",
"cat"]; `read_death` below reads them offline). Reconcile then supersedes, by the death statement, the
older statements that describe the one who died as they are now: what they are, like, do or will
do ("the user's dad lives in Ohio", "Luna is 4 years old", "the user has a cat named Luna"). Never
the history: events stay ("Luna knocked the vase over", "the user's dad taught them to fish"), and
so does anything about someone else.

About the one who died means: held by them (the statement's holder, tap.language.rules.slots.statement_holder:
"luna", "user:dad", kin words folded: "father" is "dad"), or introducing them by name ("a cat named
Luna", "the user's dog Max"). A death known only by a bare name retires something only when the
store introduces that name as someone's pet or person: "Dumbledore died in book 6" leaves "the
user's favourite character is Dumbledore" alone.

Invariants: pure; superseding is non-destructive, so a wrong retirement is visible and reversible
(`tap memories` shows superseded versions).

Reading a death off a sentence (`read_death`, for the offline extractor): (name, noun) of the one
who died, lower-cased — ("luna", "cat") for "my cat Luna died", ("", "dad") for "my dad passed
away", ("max", "") for "we had to put Max down"; ("", "") when the sentence reports no death of one
of the speaker's people or pets. Only a person or an animal the speaker has counts; a phone or a
plant that "died", a character in a book, a death that almost happened, is feared or asked about,
and someone else's relative ("my friend's dad") say nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from tap.candidates import CandidateMemory
from tap.records import Memory

__all__ = ["KIN_AND_PETS", "PEOPLE", "PETS", "PRESENT_KINDS", "read_death", "retired_by_death", "words_for_deceased"]

PRESENT_KINDS = frozenset({"fact", "preference", "plan"})
PEOPLE = frozenset(
    "mom mum mother dad father mama papa grandma grandmother grandpa grandfather granny gran nan nana nanna "
    "grandad granddad grandparent grandparents parent parents sister brother sibling wife husband partner spouse "
    "son daughter child baby aunt auntie uncle cousin niece nephew friend girlfriend boyfriend fiance fiancee "
    "stepmom stepdad stepmother stepfather mentor godfather godmother".split()
)
"""Words for the people someone has (kin, partners, friends)."""
PETS = frozenset(
    "dog cat puppy kitten pup pet hamster rabbit bunny parrot bird horse pony tortoise turtle ferret rat budgie "
    "cockatiel gecko lizard snake goldfish fish chicken hen".split()
)
"""Words for the animals someone has."""
KIN_AND_PETS = PEOPLE | PETS
_SAME_KIN = {
    "father": "dad",
    "papa": "dad",
    "mother": "mom",
    "mum": "mom",
    "mama": "mom",
    "grandmother": "grandma",
    "granny": "grandma",
    "gran": "grandma",
    "nan": "grandma",
    "nana": "grandma",
    "nanna": "grandma",
    "grandfather": "grandpa",
    "grandad": "grandpa",
    "granddad": "grandpa",
    "puppy": "dog",
    "pup": "dog",
    "kitten": "cat",
}
_INTRODUCER = r"(?:named|called|" + "|".join(sorted(KIN_AND_PETS, key=len, reverse=True)) + ")"


def words_for_deceased(deceased: Sequence[str]) -> list[str]:
    """The words a store is searched with for what is said of the one who died: the name, else the
    noun with every kin word that means the same ("dad": dad, father, papa); [] for no death."""
    name, noun = (list(deceased) + ["", ""])[:2]
    if not name and not noun:
        return []
    if name:
        return [name]
    same = _SAME_KIN.get(noun, noun)
    return [same, *(word for word, folded in _SAME_KIN.items() if folded == same)]


def retired_by_death(candidate: CandidateMemory, memories: Sequence[Memory]) -> list[Memory]:
    """The memories among `memories` that the death `candidate` reports retires (see the module
    docstring): older, present-tense, about the one who died, not from the candidate's own turns."""
    name, noun = (candidate.deceased + ["", ""])[:2]
    own = set(candidate.turn_ids)
    present = [
        m
        for m in memories
        if m.kind in PRESENT_KINDS and m.valid_from <= candidate.valid_from and not own & set(m.sources)
    ]
    kin = _kin(f"user:{noun}") if noun else ""
    if not name:
        return [m for m in present if _kin(m.holder) == kin]
    named = re.compile(rf"\b{re.escape(name)}\b", re.IGNORECASE)
    introducing = re.compile(rf"\b{_INTRODUCER}\s+{re.escape(name)}\b", re.IGNORECASE)
    introduced = {m.id for m in present if introducing.search(m.content)}
    if not introduced and not noun:
        return []  # a name the store never gave as someone's pet or person ("Dumbledore")
    return [
        m
        for m in present
        if m.holder == name or m.id in introduced or (kin and _kin(m.holder) == kin and named.search(m.content))
    ]


def _kin(holder: str) -> str:
    """A holder with its kin word folded ("user:father" → "user:dad")."""
    root, _, noun = holder.partition(":")
    return f"{root}:{_SAME_KIN.get(noun, noun)}" if noun else holder


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
