"""Near-identical texts: one says nothing the other did not, in nearly the same words and order.

`repeats(text, earlier)` when the sets of their word shingles (SHINGLE_WORDS consecutive words,
lower-cased, punctuation ignored) overlap by at least NEAR_IDENTICAL (Jaccard) and every word of
`text` is a word of `earlier`. It reads no meaning and knows no language: a paste that repeats
itself, or a passage sent again, repeats; a text that changes one word ("Three files were
skipped" after "Two files were skipped") or adds one ("order 4412") brings news and does not. Used
where the verbatim layer is written (a text said again is stored once) and where a block is packed
(a second copy takes no room).

Invariants: pure and deterministic; a text repeats itself; a text of at most SHINGLE_WORDS words
is one shingle.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["NEAR_IDENTICAL", "SHINGLE_WORDS", "repeats", "shingles"]

SHINGLE_WORDS = 2
NEAR_IDENTICAL = 0.8
_WORD = re.compile(r"\w+")


@lru_cache(maxsize=16384)
def _words(text: str) -> tuple[str, ...]:
    return tuple(_WORD.findall(text.lower()))


@lru_cache(maxsize=16384)
def shingles(text: str) -> frozenset[str]:
    """The text's runs of SHINGLE_WORDS consecutive words (lower-cased, punctuation dropped)."""
    words = _words(text)
    if len(words) <= SHINGLE_WORDS:
        return frozenset([" ".join(words)])
    return frozenset(" ".join(words[i : i + SHINGLE_WORDS]) for i in range(len(words) - SHINGLE_WORDS + 1))


def repeats(text: str, earlier: str) -> bool:
    """Whether `text` says again what `earlier` said: NEAR_IDENTICAL of their shingles shared
    (Jaccard), and no word of its own."""
    mine, theirs = shingles(text), shingles(earlier)
    small, large = sorted((len(mine), len(theirs)))
    if small < NEAR_IDENTICAL * large:  # the Jaccard cannot reach the threshold: skip the set work
        return False
    shared = len(mine & theirs)
    if shared < NEAR_IDENTICAL * (len(mine) + len(theirs) - shared):
        return False
    return set(_words(text)) <= set(_words(earlier))
