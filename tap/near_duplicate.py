"""Near-identical texts: one says nothing the other did not, in nearly the same words and order.

`repeats(text, earlier)` when the sets of their word shingles (SHINGLE_WORDS consecutive words,
lower-cased, punctuation ignored) overlap by at least NEAR_IDENTICAL (Jaccard) and every word of
`text` is a word of `earlier`. It reads no meaning and knows no language: a paste that repeats
itself, or a passage sent again, repeats; a text that changes one word ("Three files were
skipped" after "Two files were skipped") or adds one ("order 4412") brings news and does not. Used
where the verbatim layer is written (a text said again is stored once) and where a block is packed
(a second copy takes no room).

A `Fingerprint` holds a text's shingles and words as hashes (small, and only within one process):
compare many texts by their fingerprints, made once each. The cache of fingerprints is small on
purpose: the same excerpts come back recall after recall, but a cache sized for a whole store held
a fingerprint of every excerpt `tap serve` had written (~150 MB).

Invariants: pure and deterministic within a process; a text repeats itself; a text of at most
SHINGLE_WORDS words is one shingle.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

__all__ = ["NEAR_IDENTICAL", "SHINGLE_WORDS", "Fingerprint", "fingerprint", "repeats", "repeats_print"]

SHINGLE_WORDS = 2
NEAR_IDENTICAL = 0.8
FINGERPRINT_CACHE = 1024
_WORD = re.compile(r"\w+")


class Fingerprint(NamedTuple):
    """A text's shingles and words, hashed."""

    shingles: frozenset[int]
    words: frozenset[int]


@lru_cache(maxsize=FINGERPRINT_CACHE)
def fingerprint(text: str) -> Fingerprint:
    """The text's runs of SHINGLE_WORDS consecutive words (lower-cased, punctuation dropped) and its
    words, hashed."""
    words = _WORD.findall(text.lower())
    runs = [" ".join(words[i : i + SHINGLE_WORDS]) for i in range(max(1, len(words) - SHINGLE_WORDS + 1))]
    return Fingerprint(frozenset(map(hash, runs)), frozenset(map(hash, words)))


def repeats_print(mine: Fingerprint, theirs: Fingerprint) -> bool:
    """`repeats` on fingerprints."""
    small, large = sorted((len(mine.shingles), len(theirs.shingles)))
    if small < NEAR_IDENTICAL * large:  # the Jaccard cannot reach the threshold: skip the set work
        return False
    shared = len(mine.shingles & theirs.shingles)
    if shared < NEAR_IDENTICAL * (len(mine.shingles) + len(theirs.shingles) - shared):
        return False
    return mine.words <= theirs.words


def repeats(text: str, earlier: str) -> bool:
    """Whether `text` says again what `earlier` said: NEAR_IDENTICAL of their shingles shared
    (Jaccard), and no word of its own."""
    return repeats_print(fingerprint(text), fingerprint(earlier))
