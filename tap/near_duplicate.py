"""Near-identical texts: the same words in the same order, give or take a few.

Two texts are near-identical when the sets of their word shingles (SHINGLE_WORDS consecutive words,
lower-cased, punctuation ignored) overlap by at least NEAR_IDENTICAL (Jaccard). It reads no meaning
and knows no language: a long paste repeated with a line changed is near-identical, while two short
sentences that differ in one word ("I paid $40" / "I paid $50") are not, as one word changes every
shingle it is in. Used where the verbatim layer is written (one copy of a text said again) and where
a block is packed (a second copy takes no room).

Invariants: pure and deterministic; a text of fewer words than a shingle is its own one shingle.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["NEAR_IDENTICAL", "SHINGLE_WORDS", "near_identical", "shingles"]

SHINGLE_WORDS = 3
NEAR_IDENTICAL = 0.8
_WORD = re.compile(r"\w+")


@lru_cache(maxsize=16384)
def shingles(text: str) -> frozenset[str]:
    """The text's runs of SHINGLE_WORDS consecutive words (lower-cased, punctuation dropped)."""
    words = _WORD.findall(text.lower())
    if len(words) <= SHINGLE_WORDS:
        return frozenset([" ".join(words)])
    return frozenset(" ".join(words[i : i + SHINGLE_WORDS]) for i in range(len(words) - SHINGLE_WORDS + 1))


def near_identical(a: str, b: str) -> bool:
    """Whether the two texts share at least NEAR_IDENTICAL of their shingles (Jaccard)."""
    left, right = shingles(a), shingles(b)
    if left == right:
        return True
    small, large = sorted((len(left), len(right)))
    if small < NEAR_IDENTICAL * large:  # the Jaccard cannot reach the threshold: skip the set work
        return False
    shared = len(left & right)
    return shared >= NEAR_IDENTICAL * (len(left) + len(right) - shared)
