"""Linear probes on the embedder's vectors: what a statement is, read from its meaning.

The offline rules recognise what they were written for; a sentence said another way slips past
them. A probe is a logistic regression over a statement's vector (the same vector the store
keeps), so it answers alike for every phrasing that means the same thing:

- `keep`: is this statement worth a memory (a fact, preference, plan or decision about someone),
  rather than chat, a reaction or a fragment? The rules propose what they leave out for its
  wording alone as *tentative* statements, and the keep probe decides.

The weights are trained by `./dev bench train_probes` on the quality set's dev split only and
shipped in probes.json, for the one embedder they were trained on (model id and width); with
another embedder there are no probes and the rules decide alone.

Invariants: pure and deterministic; a score is a probability in [0, 1].
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["Probe", "Probes", "load_probes", "parse_probes"]

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
    embedder or width (none of them would apply)."""
    if raw.get("embedder") != embedder:
        return None
    try:
        return Probes(embedder=embedder, keep=_probe(raw["keep"], width))
    except (KeyError, TypeError, ValueError):
        return None
