"""The offline rule-based extractor, by concern.

- `text`: sentences, leads, requests inside statements, content words;
- `keep`: which sentences are worth a memory;
- `person`: first person → third person ("I" → "the user" / the speaker's name);
- `dates`: relative dates → absolute phrases;
- `classify`: kind and importance;
- `slots`: the single-valued attribute a statement fills, and what it retracts or corrects;
- `extractor`: `RulesExtractor`, which puts them together;
- `excerpts`: the verbatim layer (kind `episode`) beside the statements.

The candidate type they produce is tap.candidates.CandidateMemory, shared with the LLM providers.
"""

from tap.language.rules.dates import format_day, resolve_dates
from tap.language.rules.excerpts import Excerpt, turn_excerpts
from tap.language.rules.extractor import RulesExtractor, with_dates
from tap.language.rules.person import rewrite_first_person, third_person
from tap.language.rules.slots import read_slot

__all__ = [
    "Excerpt",
    "RulesExtractor",
    "with_dates",
    "format_day",
    "read_slot",
    "resolve_dates",
    "rewrite_first_person",
    "third_person",
    "turn_excerpts",
]
