"""Data records shared by every part of tap (msgspec Structs, no behaviour).

Invariants:
- a `Memory` is one self-contained statement owned by exactly one scope;
- history is non-destructive: an edit writes a new `Memory` whose `supersedes` names the old
  id, and the old one gets `superseded_by`; a consolidation merge writes one new memory whose
  `merged_from` names every memory it folds in, each of which gets `superseded_by`;
- `current` = no newer version (`superseded_by == ""`); `archived` = set aside by consolidation or
  by hand (`archived_at > 0`): still listed and restorable, never recalled; `active` = current and
  not archived, the only memories recall, reconcile and the lexical index ever see;
- `conflicts_with` names the active memories a memory contradicts without tap being able to tell
  which is current (tap.memories.conflicts): both stay active, and recall shows both with their dates;
- timestamps are POSIX seconds (float, UTC); text renderings use ISO dates.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Sequence
from typing import Annotated, Literal

import msgspec

Kind = Literal["fact", "preference", "decision", "event", "instruction", "plan", "episode"]
KINDS: tuple[str, ...] = ("fact", "preference", "decision", "event", "instruction", "plan", "episode")
OUTDATED_TAG = "outdated"
"""Tag of an excerpt whose statement a newer one superseded: the verbatim line still says the old
value, so recall lets it yield for questions about the present (it stays searchable as history)."""
QUESTION_TAG = "question"
"""Tag of an excerpt of a turn that only asks (tap.language.rules.excerpts): it states no fact."""
ACKNOWLEDGEMENT_TAG = "acknowledgement"
"""Tag of an excerpt of an assistant's turn that only acknowledges what the user said."""
NO_FACT_TAGS = frozenset({QUESTION_TAG, ACKNOWLEDGEMENT_TAG})
"""Excerpts with one of these take a block's room only after every other memory (tap.recall.engine)."""
Source = Literal["proxy", "telegram", "logtail", "hook", "mitm", "mcp", "manual", "import"]
SOURCES: tuple[str, ...] = ("proxy", "telegram", "logtail", "hook", "mitm", "mcp", "manual", "import")
Importance = Annotated[int, msgspec.Meta(ge=1, le=5)]
REMEMBERED = "remembered"
"""The conversation of every statement an agent asked tap to remember (tap.extract.remember)."""


MAX_PASSAGES = 16
"""Passages of one turn looked up by excerpt id (a turn of up to 16 x 60 words)."""


def excerpt_id(scope: str, conversation: str, key: str) -> str:
    """Deterministic id of an excerpt (`key`: the turn id and the passage's position, joined by
    \x1f): the same turn passage from any chunk gets the same id."""
    digest = hashlib.sha256(f"{scope}\x1f{conversation}\x1f{key}".encode()).hexdigest()[:20]
    return "x_" + digest


def new_id() -> str:
    """A fresh memory id: short, url-safe, sortable enough for humans to copy."""
    return "m_" + uuid.uuid4().hex[:20]


class Memory(msgspec.Struct, kw_only=True, omit_defaults=False, gc=False):
    """One long-term memory (docs/architecture.md, Memory records)."""

    id: str
    scope: str
    content: str
    kind: Kind = "fact"
    importance: Importance = 3
    tags: tuple[str, ...] = ()
    source: Source = "manual"
    conversation: str = ""
    sources: tuple[str, ...] = ()
    created_at: float = 0.0
    updated_at: float = 0.0
    valid_from: float = 0.0
    supersedes: str = ""
    superseded_by: str = ""
    access_count: int = 0
    last_accessed: float = 0.0
    embedder: str = ""
    slot: str = ""
    slot_part: str = ""
    slot_value: str = ""
    context: str = ""
    holder: str = ""
    archived_at: float = 0.0
    conflicts_with: tuple[str, ...] = ()
    merged_from: tuple[str, ...] = ()

    @property
    def index_text(self) -> str:
        """What search matches this memory by: its content, and the context that leads to it
        (for an excerpt, the end of the turn it answers), which the content itself does not show."""
        return f"{self.content}\n{self.context}" if self.context else self.content

    @property
    def current(self) -> bool:
        """True when no newer version replaces this one (archived or not)."""
        return not self.superseded_by

    @property
    def archived(self) -> bool:
        """True when the memory is set aside: listed and restorable, never recalled."""
        return self.archived_at > 0

    @property
    def active(self) -> bool:
        """True when recall may use it: the current version, and not archived."""
        return not self.superseded_by and not self.archived_at


def make_memory(
    *,
    scope: str,
    content: str,
    kind: Kind = "fact",
    importance: int = 3,
    tags: Sequence[str] = (),
    source: Source = "manual",
    conversation: str = "",
    sources: Sequence[str] = (),
    valid_from: float | None = None,
    now: float | None = None,
) -> Memory:
    """Build a new, active memory with a fresh id and timestamps."""
    at = time.time() if now is None else now
    return Memory(
        id=new_id(),
        scope=scope,
        content=content.strip(),
        kind=kind,
        importance=max(1, min(5, importance)),
        tags=tuple(tags),
        source=source,
        conversation=conversation,
        sources=tuple(sources),
        created_at=at,
        updated_at=at,
        valid_from=at if valid_from is None else valid_from,
    )


class Hit(msgspec.Struct, kw_only=True, gc=False):
    """A memory returned by a search, with the score of the retriever that found it."""

    memory: Memory
    score: float


class Message(msgspec.Struct, kw_only=True):
    """One conversation message as every source hands it to ingestion."""

    role: str
    content: str
    name: str = ""
    id: str = ""
    timestamp: float = 0.0


class IngestEvent(msgspec.Struct, kw_only=True):
    """The one event shape every source (proxy, log-tail, Telegram, hooks, ...) ingests."""

    scope: str
    conversation: str
    source: Source
    messages: list[Message]


class Recalled(msgspec.Struct, kw_only=True):
    """One memory placed in a recall block, with its final score."""

    memory: Memory
    score: float
    tokens: int


class RecallResult(msgspec.Struct, kw_only=True):
    """What recall returns: the rendered block, its token count and the memories in it."""

    block: str
    tokens: int
    memories: list[Recalled]
    elapsed_ms: float = 0.0
    lexical_only: bool = False
    """Recalled by BM25 alone: the recall batcher's fallback under overload (tap.recall.admission)."""


class SourceTurn(msgspec.Struct, frozen=True, kw_only=True):
    """One conversation turn a memory was taken from."""

    id: str
    role: str
    text: str
    at: float = 0.0
