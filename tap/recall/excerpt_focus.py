"""Excerpts cut to what the question is about, for the block (tap.recall.engine).

An excerpt (kind `episode`) is a verbatim passage of up to 60 words of one turn. Users' turns
often open with an unrelated ask and mention the detail in passing ("I'm planning a trip to Jordan
… By the way, I visited the Natural History Museum with my dad yesterday"), and assistant turns
are long lists: a whole passage costs 60-90 tokens, most of them about something else, and a 500-
token block held about seven memories. So the block shows an excerpt as the sentences that hold a
word of the question, verbatim, with "…" where sentences were left out (the memory itself, its
id, date and citation are unchanged; `tap memories show` has the whole passage):

- a passage of one sentence, one where no sentence holds a word of the question (found by its
  meaning, not its words), or one that holds a list ("1. … 2. …", "- … - …": "what was the 7th
  job in the list you gave me?" needs the items around the ones that match) is shown whole;
- otherwise every sentence that holds a word of the question is kept, and the sentence after one
  that ends with ":" (a list's lead-in: "I'd suggest these hotels:"); when what is kept is most
  of the passage (`WHOLE_SHARE` of its words) the whole passage is shown;
- words are compared lower-cased, without stop words and with a light stemmer (tap.language.terms) ("hotels",
  "hotel"; "visited", "visit"); the same function reads the question and the passage, so the
  two sides always agree.

Pure functions, no I/O; the same (content, terms) always gives the same line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import NamedTuple

from tap.language.terms import is_stop_word, stem

__all__ = ["ELLIPSIS", "excerpt_snippet", "snippet_floor", "terms_of"]

ELLIPSIS = "…"
WHOLE_SHARE = 0.75
MAX_SPEAKER_CHARS = 40

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
_LIST_ITEM = re.compile(r"(?<!\S)(?:\d{1,2}[.)]|[-*•])(?=\s)")
_SENTENCE_GAP = re.compile(r"(?<=[.!?…:])\s+(?=\S)")


def terms_of(text: str) -> frozenset[str]:
    """The stemmed content words of a text (stop words left out; numbers kept)."""
    found = set(map(_term, _WORD.findall(text.lower())))
    found.discard("")
    return frozenset(found)


@lru_cache(maxsize=65536)
def _term(word: str) -> str:
    """A lower-cased word's stem, or "" for a stop word."""
    return "" if is_stop_word(word) else stem(word)


class _Passage(NamedTuple):
    """What cutting an excerpt needs from its content, whatever the question (see `_passage`)."""

    label: str
    """"User: " when the content opens with a speaker label, else ""."""
    sentences: tuple[str, ...]
    """The passage's sentences; empty when it is always shown whole (a list, or one sentence)."""
    words: tuple[int, ...]
    """Each sentence's words."""
    passage_words: int
    floor: int
    """snippet_floor's answer."""


@lru_cache(maxsize=32768)
def _passage(content: str) -> _Passage:
    """The content split once (the same excerpts come back query after query); no stemming, so
    snippet_floor stays cheap for an excerpt the block passes over (`_sentence_terms` stems)."""
    label, passage = _speaker(content)
    split = [] if len(_LIST_ITEM.findall(passage)) >= 2 else _SENTENCE_GAP.split(passage)
    if len(split) < 2:  # a list (its items' order and neighbours are what "the 7th one" asks about), or one sentence
        return _Passage(label, (), (), 0, _solid(content))
    return _Passage(
        label,
        tuple(split),
        tuple(len(sentence.split()) for sentence in split),
        len(passage.split()),
        _solid(label) + min(_solid(sentence) for sentence in split),
    )


@lru_cache(maxsize=32768)
def _sentence_terms(sentences: tuple[str, ...]) -> tuple[frozenset[str], ...]:
    """Each sentence's terms (terms_of), once per passage."""
    return tuple(terms_of(sentence) for sentence in sentences)


def _speaker(content: str) -> tuple[str, str]:
    """('User: ', passage) when the content opens with a speaker label, else ('', content)."""
    head, sep, rest = content.partition(": ")
    if sep and 0 < len(head) <= MAX_SPEAKER_CHARS and not re.search(r"[.!?:]", head):
        return head + sep, rest
    return "", content


def excerpt_snippet(content: str, terms: Iterable[str]) -> str:
    """The excerpt's content as the block shows it for a question with these (stemmed) terms: its
    sentences that hold one of them, "…" marking what was left out (see the module docstring)."""
    wanted = frozenset(terms)
    if not wanted:
        return content
    parsed = _passage(content)
    if not parsed.sentences:
        return content
    keep = [not found.isdisjoint(wanted) for found in _sentence_terms(parsed.sentences)]
    if not any(keep):
        return content
    sentences = parsed.sentences
    for i in range(len(sentences) - 1):
        if keep[i] and sentences[i].endswith(":"):
            keep[i + 1] = True
    kept_words = sum(n for n, k in zip(parsed.words, keep, strict=True) if k)
    if kept_words >= WHOLE_SHARE * parsed.passage_words:
        return content
    parts: list[str] = []
    for i, sentence in enumerate(sentences):
        if keep[i]:
            parts.append(sentence)
        elif not parts or parts[-1] != ELLIPSIS:
            parts.append(ELLIPSIS)
    return parsed.label + " ".join(parts)


def snippet_floor(content: str) -> int:
    """A lower bound of the non-space characters of `excerpt_snippet(content, terms)` for any
    terms: its shortest sentence (with its speaker label), or the whole content where it is always
    shown whole. Cheap (no stemming), so the block can pass over an excerpt that cannot fit
    without cutting it to the question first."""
    return _passage(content).floor


def _solid(text: str) -> int:
    return len(text) - text.count(" ")
