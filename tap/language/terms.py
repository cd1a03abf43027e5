"""The words of a text that carry its content, for comparing a question with a passage: English
stop words and a light stemmer ("hotels", "hotel"; "visited", "visit"). Recall's excerpt focus
(tap.recall.excerpt_focus) reads both sides with them, so the two always agree.

Pure functions, no I/O.
"""

from __future__ import annotations

from functools import lru_cache

__all__ = ["is_stop_word", "stem"]

_STOP = frozenset(
    "a about after again all also am an and any are as at be been before being but by can could did do does "
    "doing done for from get got had has have having he her here hers him his how i i'd i'll i'm i've if in "
    "into is it it's its just let me mine my myself no nor not now of off on once only or other our ours out "
    "over own said say says she should so some such than that that's the their theirs them then there these "
    "they this those through to too under until up us very was we were what what's when where which while "
    "who whom why will with would you your yours yourself tell told remember mentioned mention".split()
)


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light stemmer: enough for a question's word to meet the same word in a passage."""
    word = word.lower().replace("’", "'")
    if word.endswith("'s"):
        word = word[:-2]
    if len(word) <= 4:
        return word
    for suffix, replacement in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: len(word) - len(suffix)] + replacement
    return word


def is_stop_word(word: str) -> bool:
    """Whether a lower-cased word carries no content for the comparison ("the", "told", "i'm")."""
    return word.replace("’", "'") in _STOP
