"""The kind and importance of a kept statement.

Kinds (tap.records.Kind): `instruction` (a standing instruction to the assistant), `decision`
("let's use pytest", "we decided to…", "I'm going with…"), `preference` (likes, dislikes,
favourites, diets), `plan` (what the speaker will do), `event` (what happened: a past action),
`fact` (everything else: who the speaker is, where they live and work, their people, their tools).
Importance (1-5): a kind's base, +1 for the slots people ask about most (where someone lives and
works, their role, names, relationship), +1 for a dated event or plan, -1 for a statement about a
third party that names no one the speaker knows.

Invariants: pure; the same sentence always gets the same kind.
"""

from __future__ import annotations

import re

from tap.language.rules.dates import sentence_tense
from tap.records import Kind

__all__ = ["classify", "importance"]

_DECISION = re.compile(
    r"\blet'?s\b|\blet’s\b|\bpicked(?!\s+up)\b"
    r"|\b(?:decided|agreed|chose|settled on|opted|going with|go with|went with|sticking with"
    r"|stick with|standardi[sz]ed on|committed to using)\b|\bdecision\b"
    r"|\b(?:we|I)(?:'ll|’ll| will) (?:use|go with|switch to)\b",
    re.IGNORECASE,
)
_PREFERENCE = re.compile(
    r"\b(?:like|likes|love|loves|enjoy|enjoys|prefer|prefers|hate|hates|dislike|dislikes|adore"
    r"|can'?t stand|can’t stand|favou?rite|fan of|into|rather|allergic|vegetarian|vegan|pescatarian|keto"
    r"|no longer eat|don'?t eat|doesn'?t eat|don'?t drink|can'?t eat|avoid)\b",
    re.IGNORECASE,
)
_EVENT = re.compile(
    r"\b(?:went|got|made|took|saw|met|ran|began|bought|gave|found|won|wrote|read|built|left|lost|became|came|started"
    r"|finished|completed|visited|joined|moved|attended|adopted|signed|graduated|married|travel+ed|painted|tried"
    r"|learned|learnt|launched|shipped|passed|spent|celebrated|volunteered|submitted|received|returned|booked"
    r"|ordered|sold|quit|broke|fixed|hired|fired|bumped|turned|had|did|baked|cooked|watched|played|climbed|hiked"
    r"|published|released|migrated|switched|upgraded|replaced|renamed|named|lost|earned|raised|ran|died)\b",
    re.IGNORECASE,
)
_BASE: dict[Kind, int] = {
    "instruction": 4,
    "decision": 4,
    "preference": 3,
    "plan": 3,
    "event": 3,
    "fact": 3,
    "episode": 1,
}
_KEY_ATTRIBUTES = ("residence", "employer", "job", "name", "relationship", "diet")


def classify(sentence: str, *, instruction: bool = False, slot: str = "") -> Kind:
    """The kind of memory a kept (first-person, lead-stripped) sentence makes."""
    if instruction:
        return "instruction"
    if _DECISION.search(sentence):
        return "decision"
    tense = sentence_tense(sentence)
    if tense > 0:
        return "plan"
    if _PREFERENCE.search(sentence) and not slot.endswith(("|residence", "|employer", "|job")):
        return "preference"
    if tense < 0 and _EVENT.search(sentence) and not slot:
        return "event"
    return "fact"


def importance(kind: Kind, *, slot: str, dated: bool, third_party: bool) -> int:
    """1-5 (see the module docstring)."""
    score = _BASE[kind]
    if slot.endswith(_KEY_ATTRIBUTES):
        score += 1
    if dated and kind in ("event", "plan"):
        score += 1
    if third_party:
        score -= 1
    return max(1, min(5, score))
