"""The recall query: the latest human turn reduced to what the embedder and BM25 can use.

A turn can be a one-line question or 4,000 characters of pasted code and logs. Recall's cost grew
with it (a 256-token embedding costs ten times a short one; a BM25 query of 32 terms reads the
postings of every one), while neither side gains from the bulk: MiniLM reads at most 256 tokens and
averages them into one vector, and BM25 ranks by the rare terms. So the query is bounded:

- fenced code blocks (```) are set aside; when nothing else is left they are the query;
- the embedder gets the first `EMBED_HEAD_WORDS` and the last `EMBED_TAIL_WORDS` words of what is
  left, leaving out "words" longer than `LONG_WORD` characters (hashes, base64, URLs: each would
  be dozens of tokens) and, in a longer turn, every word that is not made of letters (numbers,
  timestamps, paths: several tokens each) — a turn's ask is usually at its start or its end; a
  turn of at most `EMBED_WHOLE_WORDS` words is embedded whole, as it was (but
  for overlong words; all of LoCoMo's and LongMemEval's questions are). The whole of a 4,000-
  character turn (256 tokens) cost about ten times a question to embed; this costs about as much;
- the lexical side gets up to `LEXICAL_CHARS` characters of it (its start and its end); the store
  keeps the most informative of its terms (store.lexical: the rarest ones, within a postings
  budget);
- a turn longer than `MAX_INPUT_CHARS` is read by its start and its end only;
- a short turn that names a group of people or animals ("kids", "family", "pets") also asks the
  lexical side for the words its members go by ("son", "daughter"): `with_members`;
- what the query asks for (tap.language.query_reading) is read from the reduced text (the same words
  the ranking sees).

Pure functions, no I/O: the same turn always gives the same query (the recall cache keys on it).
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass

from tap.language.query_reading import with_members

EMBED_WHOLE_WORDS = 40
EMBED_HEAD_WORDS = 20
EMBED_TAIL_WORDS = 12
LONG_WORD = 32
LEXICAL_CHARS = 2000
MAX_INPUT_CHARS = 20000

_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_PUNCTUATION = string.punctuation + "“”‘’«»…"


@dataclass(frozen=True)
class RecallQuery:
    """What recall searches with: `text` (embedded), `lexical` (BM25 terms come from it)."""

    text: str
    lexical: str

    @property
    def empty(self) -> bool:
        """True when there is nothing to search for."""
        return not self.text


def prose(text: str) -> str:
    """The text without fenced code blocks, whitespace collapsed (the whole text when that is all)."""
    return " ".join(_FENCE.sub(" ", text).split()) or " ".join(text.split())


def _bare(word: str) -> str:
    """A word without the punctuation around it."""
    return word.strip(_PUNCTUATION)


def reduce_query(turn: str) -> RecallQuery:
    """The bounded recall query for a human turn (see the module docstring)."""
    if len(turn) > MAX_INPUT_CHARS:  # its start and its end: where the ask usually is
        turn = turn[: MAX_INPUT_CHARS // 2] + "\n" + turn[-MAX_INPUT_CHARS // 2 :]
    text = prose(turn)
    words = [w for w in text.split() if len(w) <= LONG_WORD] or [text[: 2 * LONG_WORD]]
    if len(words) > EMBED_WHOLE_WORDS:
        # only words made of letters: numbers, paths, hex and symbols cost several tokens each
        # and carry little of what a turn is about
        words = [w for w in (_bare(w) for w in words) if w.isalpha()] or words
    if len(words) > EMBED_WHOLE_WORDS:
        embedded = " ".join(words[:EMBED_HEAD_WORDS] + ["…"] + words[-EMBED_TAIL_WORDS:])
    else:
        embedded = " ".join(words)
    lexical = text if len(text) <= LEXICAL_CHARS else text[: LEXICAL_CHARS // 2] + " " + text[-LEXICAL_CHARS // 2 :]
    if len(words) <= EMBED_WHOLE_WORDS:
        lexical = with_members(lexical)
    return RecallQuery(text=embedded, lexical=lexical)
