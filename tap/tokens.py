"""A token counter that errs on the high side for the budgets tap enforces.

Recall promises a block of at most N tokens *as the model counts them*, yet tap cannot ship every
model's tokenizer. This counter over-estimates every BPE tokenizer in use on ordinary text:
- an ASCII word costs one token per started 4 characters (common words are 1 token in BPE,
  rare words split into pieces of about 3-4 characters);
- digits cost one token per started group of 3 (BPE tokenizers split numbers at most that way);
- every other ASCII symbol costs one token, runs of whitespace cost one token per newline
  (a space before a word is folded into the word, as BPE does);
- a non-ASCII character costs its UTF-8 length minus one (accents 1, CJK 2, emoji 3), at least 1.
The tests check it against the real tokenizers the environment has and never let it count less.
"""

from __future__ import annotations

import re
from functools import lru_cache

_PIECE = re.compile(r"[A-Za-z]+|[0-9]+|\n|[ \t\r\f\v]+|[\x00-\x7f]|[^\x00-\x7f]")


_CACHED_CHARS = 2000


def count_tokens(text: str) -> int:
    """Upper estimate of the model tokens `text` needs."""
    # Recall counts the line of every candidate memory, and the same memories come back request
    # after request: short texts are remembered (counting is a Python loop over the pieces).
    return _count_cached(text) if len(text) <= _CACHED_CHARS else _count(text)


@lru_cache(maxsize=256)
def count_turn_tokens(text: str) -> int:
    """`count_tokens` for the chunker, with a cache of its own: an open window's turns are counted
    again at each new turn, a few hundred at most, and then never again. Through recall's cache, a
    backfill's turn lines would fill it and push out the memory lines recall counts request after
    request."""
    return _count(text)


@lru_cache(maxsize=32768)
def _count_cached(text: str) -> int:
    return _count(text)


def _count(text: str) -> int:
    return sum(_piece_tokens(piece) for piece in _PIECE.findall(text))


def _piece_tokens(piece: str) -> int:
    first = piece[0]
    if first.isascii() and first.isalpha():
        return (len(piece) + 3) // 4
    if first.isdigit() and first.isascii():
        return (len(piece) + 2) // 3
    if first == "\n":
        return 1
    if first in " \t\r\f\v":
        return 0
    if first.isascii():
        return 1
    return max(1, len(first.encode("utf-8")) - 1)


def chars_within(text: str, max_tokens: int) -> int:
    """How many leading characters of `text` cost at most `max_tokens` by `count_tokens` (the whole
    length when all of it does). Reads only that far: a 20 MB text costs what its prefix costs."""
    total = 0
    for match in _PIECE.finditer(text):
        total += _piece_tokens(match.group())
        if total > max_tokens:
            return match.start()
    return len(text)
