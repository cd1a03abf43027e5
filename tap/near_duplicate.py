"""Near-identical texts: the same words in the same order, give or take a few, and the same numbers.

Two texts are near-identical when the sets of their word shingles (SHINGLE_WORDS consecutive words,
lower-cased, punctuation ignored) overlap by at least NEAR_IDENTICAL (Jaccard) and neither holds a
number the other lacks. It reads no meaning and knows no language: a long paste said again with
another first line is near-identical, while two short sentences that differ in one word ("I love
my new bike" / "I hate my new bike") are not, as one word changes every shingle it is in, and
"order 4411 shipped" is never a copy of "order 4412 shipped". Used where the verbatim layer is
written (a text said again is stored once) and where a block is packed (a second copy takes no
room).

Invariants: pure and deterministic; symmetric; a text of at most SHINGLE_WORDS words is one shingle.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["NEAR_IDENTICAL", "SHINGLE_WORDS", "near_identical", "shingles"]

SHINGLE_WORDS = 2
NEAR_IDENTICAL = 0.8
_WORD = re.compile(r"\w+")
_NUMBER = re.compile(r"\d+")


@lru_cache(maxsize=16384)
def shingles(text: str) -> frozenset[str]:
    """The text's runs of SHINGLE_WORDS consecutive words (lower-cased, punctuation dropped)."""
    words = _WORD.findall(text.lower())
    if len(words) <= SHINGLE_WORDS:
        return frozenset([" ".join(words)])
    return frozenset(" ".join(words[i : i + SHINGLE_WORDS]) for i in range(len(words) - SHINGLE_WORDS + 1))


@lru_cache(maxsize=16384)
def _numbers(text: str) -> frozenset[str]:
    return frozenset(_NUMBER.findall(text))


def near_identical(a: str, b: str) -> bool:
    """Whether the two texts share at least NEAR_IDENTICAL of their shingles (Jaccard) and the
    same numbers."""
    left, right = shingles(a), shingles(b)
    if left == right:
        return _numbers(a) == _numbers(b)
    small, large = sorted((len(left), len(right)))
    if small < NEAR_IDENTICAL * large:  # the Jaccard cannot reach the threshold: skip the set work
        return False
    shared = len(left & right)
    return shared >= NEAR_IDENTICAL * (len(left) + len(right) - shared) and _numbers(a) == _numbers(b)
