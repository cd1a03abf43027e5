"""Remember one statement on request (an agent's `remember` tool): through the same reconcile as
extracted memories, so an update supersedes what it updates and a restatement is no new memory.

The text is kept as it was given (scrubbed; an agent writes what the user asked it to keep), as
one user turn of its own (source `mcp`, conversation REMEMBERED, a turn id unique to the moment).
The offline rules (tap.language.rules) read it too, as the user would say it (tap.language.person:
"The user lives in Lisbon" is read as "I live in Lisbon"): when they take exactly one statement
from it, its structure (the slot it fills, what it retracts or corrects, whom it is about) goes
with the text, so "The user moved to Lisbon" supersedes "The user lives in Berlin" by the slot
rule; otherwise the reconcile's similarity rules decide.
Kind and importance are the caller's, else the rules', else `fact` and 3.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable

import msgspec

from tap.candidates import CandidateMemory, merge_duplicates
from tap.extract.pipeline import Extraction
from tap.extract.reconcile import Plan
from tap.ingest.chunker import Chunk, Turn
from tap.language.person import as_first_person
from tap.language.rules import RulesExtractor
from tap.records import REMEMBERED, Kind, Memory, Source
from tap.scrub import scrub
from tap.tokens import count_tokens

MAX_REMEMBER_CHARS = 2000
DEFAULT_IMPORTANCE = 3


class Remembered(msgspec.Struct, kw_only=True):
    """What `remember` did: the reconcile's action (add | noop | update | supersede | history |
    conflict | drop), the memory now holding the statement (for a noop the one that already did;
    None for a drop) and `related`: the memories it replaced (update, supersede), contradicts
    (conflict) or is older than (history: it was written as history of a newer statement)."""

    action: str
    memory: Memory | None
    related: list[Memory] = msgspec.field(default_factory=list)


def statement_turn(scope: str, text: str, at: float, source: Source) -> Chunk:
    """A chunk of one user turn saying `text` at `at` (ids unique to the scope, text and moment)."""
    turn_id = "r_" + hashlib.sha256(f"{scope}\x1f{text}\x1f{at!r}".encode()).hexdigest()[:16]
    turn = Turn(id=turn_id, role="user", speaker="User", text=text, timestamp=at)
    return Chunk(
        id="c_" + turn_id[2:],
        scope=scope,
        conversation=REMEMBERED,
        source=source,
        turns=[turn],
        tokens=count_tokens(text),
    )


def candidate_for(chunk: Chunk, kind: Kind | None, importance: int | None) -> CandidateMemory:
    """The turn's text as a candidate, with the structure the rules read in it (see the module docstring)."""
    turn = chunk.turns[0]
    spoken = as_first_person(turn.text)
    said = (
        chunk if spoken is None else msgspec.structs.replace(chunk, turns=[msgspec.structs.replace(turn, text=spoken)])
    )
    found = merge_duplicates(RulesExtractor().extract(said))
    ruled = found[0] if len(found) == 1 else None
    base = ruled or CandidateMemory(
        content=turn.text, kind="fact", importance=DEFAULT_IMPORTANCE, tags=[], turn_ids=[], valid_from=turn.timestamp
    )
    return msgspec.structs.replace(
        base,
        content=turn.text,
        kind=kind or base.kind,
        importance=importance or base.importance,
        turn_ids=[turn.id],
        valid_from=turn.timestamp,
    )


def remember(
    extraction: Extraction,
    *,
    scope: str,
    text: str,
    kind: Kind | None = None,
    importance: int | None = None,
    source: Source = "mcp",
    now: Callable[[], float] = time.time,
) -> Remembered:
    """Reconcile and write one statement (see the module docstring); ValueError for empty or
    oversized text (the limit is MAX_REMEMBER_CHARS: one statement, not a document)."""
    cleaned = " ".join(scrub(text).split())
    if not cleaned:
        raise ValueError(
            "nothing to remember" + (" once private spans and secrets are removed" if text.strip() else "")
        )
    if len(cleaned) > MAX_REMEMBER_CHARS:
        raise ValueError(
            f"text is {len(cleaned)} characters; remember takes one statement of at most {MAX_REMEMBER_CHARS}"
        )
    chunk = statement_turn(scope, cleaned, now(), source)
    single = extraction.single()
    plan, memory_id = single.apply_one(chunk, candidate_for(chunk, kind, importance))
    return _outcome(single, plan, memory_id)


def _outcome(extraction: Extraction, plan: Plan, memory_id: str) -> Remembered:
    if plan.action in ("noop", "drop"):
        return Remembered(action=plan.action, memory=plan.target)
    found = extraction.store.get([memory_id])
    related = [m for m in [plan.target, *plan.also] if m is not None]
    return Remembered(action=plan.action, memory=found[0] if found else None, related=related)
