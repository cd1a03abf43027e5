"""Linear probes on the embedder's vectors: what a statement is, read from its meaning.

The offline rules recognise what they were written for; a sentence said another way slips past
them. A probe is a logistic regression over a statement's vector (the same vector the store keeps),
so it answers for every phrasing that means the same thing:

- `keep`: is this statement worth a memory (a fact, preference, plan or decision about someone),
  rather than chat, a reaction or a fragment?
- `change`: does it report that something changed (a new home, job, tool, value; something given
  up, ended or gone back to), rather than a standing fact?
- `link`: over a pair of statements of the same person (`link_features`), is the newer one an
  update of the older one (same kind of thing, another value)? Surely so: the newer replaces it;
  likely so: the two are one line (`Memory.topic`), which recall shows together, newest first.

The weights are trained by `./dev bench train_probes` on the quality set's dev split only and
shipped in probes.json, for the one embedder they were trained on (its model id); with another
embedder there are no probes and callers fall back to the rules alone.

Invariants: pure and deterministic; a score is a probability in [0, 1].
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from tap.language.rules.text import content_words

__all__ = [
    "LINK_FEATURES",
    "Probe",
    "Probes",
    "distinctive_words",
    "link_features",
    "load_probes",
    "numbers",
    "parse_probes",
]

PROBES_FILE = "probes.json"


@dataclass(frozen=True)
class Probe:
    """One logistic regression: P = sigmoid(weights · vector + bias); `threshold` is the score from
    which the probe's answer is yes."""

    weights: tuple[float, ...]
    bias: float
    threshold: float

    def score(self, vector: Sequence[float]) -> float:
        """The probability that the answer is yes for this vector."""
        z = self.bias + math.fsum(w * v for w, v in zip(self.weights, vector, strict=True))
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))

    def says_yes(self, vector: Sequence[float]) -> bool:
        """Whether the score reaches the threshold."""
        return self.score(vector) >= self.threshold


@dataclass(frozen=True)
class Probes:
    """The probes trained for one embedder."""

    embedder: str
    keep: Probe
    change: Probe
    link: Probe
    topic_threshold: float
    """The link probe's score from which two statements are one line (below its own threshold,
    from which the newer replaces the older)."""


def _probe(raw: dict[str, Any], width: int) -> Probe:
    weights = raw["weights"]
    if not isinstance(weights, list) or len(weights) != width:
        raise ValueError(f"a probe needs {width} weights")
    return Probe(tuple(float(w) for w in weights), float(raw["bias"]), float(raw["threshold"]))


@cache
def load_probes(embedder: str, width: int) -> Probes | None:
    """The probes shipped for this embedder (model id and vector width), or None when there are
    none (another embedder, or no probes file)."""
    try:
        text = resources.files("tap.language").joinpath(PROBES_FILE).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    return parse_probes(json.loads(text), embedder, width)


def parse_probes(raw: dict[str, Any], embedder: str, width: int) -> Probes | None:
    """The probes of a probes file's content for this embedder; None when they are for another
    embedder, width or feature set (none of them would apply)."""
    if raw.get("embedder") != embedder:
        return None
    try:
        return Probes(
            embedder=embedder,
            keep=_probe(raw["keep"], width),
            change=_probe(raw["change"], width),
            link=_probe(raw["link"], len(LINK_FEATURES)),
            topic_threshold=float(raw["link"]["topic_threshold"]),
        )
    except (KeyError, TypeError, ValueError):
        return None


_NOT_DISTINCTIVE = frozenset({"user", "users", "user's"})


def distinctive_words(content: str) -> frozenset[str]:
    """The words of a statement that tell what it is about (content words, not "the user")."""
    return frozenset(content_words(content)) - _NOT_DISTINCTIVE


LINK_FEATURES = ("cosine", "shared_words", "days_apart", "change", "other_number")
_NUMBER = re.compile(r"\d+(?:[.,:/]\d+)*")
_ADDED_DATES = re.compile(r"\s*\([^()]*\)\s*$")


def numbers(content: str) -> frozenset[str]:
    """The numbers a statement states (not the dates tap adds to it in brackets)."""
    return frozenset(_NUMBER.findall(_ADDED_DATES.sub("", content)))


def link_features(*, newer: str, older: str, cosine: float, days_apart: float, change: float) -> tuple[float, ...]:
    """The features the link probe reads for a newer statement and an older one of the same person:
    how alike they are (cosine of their vectors, distinctive words in common, at most 3), how far
    apart in time (log of days), how surely the newer one reports a change (the change probe's
    score), and whether, with a word in common, the two give other numbers (a rating, a dose, a
    price that moved). The older one is never an event: what happened stays history."""
    shared = distinctive_words(newer) & distinctive_words(older)
    now, before = numbers(newer), numbers(older)
    other_number = bool(shared and now and before and not now & before)
    return (
        cosine,
        float(min(len(shared), 3)),
        math.log1p(max(0.0, days_apart)),
        change,
        float(other_number),
    )
