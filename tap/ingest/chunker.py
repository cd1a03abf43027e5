"""Turning ingested messages into turns, and turns into overlapping chunks for extraction.

`prepare_turns` keeps only what a memory may come from: user and assistant text, scrubbed
(tap.scrub), non-empty. `chunk_turns` cuts a conversation into windows of about `chunk_tokens`
tokens that repeat about `overlap_tokens` tokens of whole turns from the previous window, so a
statement and the question before it land in one chunk. `render_chunk` is the text extractors see:
one line per turn, labelled with the turn id so extracted memories can cite their turns.

Invariants:
- turns are never split or reordered; every turn appears in at least one chunk;
- a turn costing more than `chunk_tokens` gets a chunk of its own (no overlap into or out of it),
  and its text is cut to `4 * chunk_tokens` tokens with the marker `[…truncated]`;
- ids are deterministic: a turn without an id gets a hash of (conversation, index, text); a chunk id
  is a hash of (scope, conversation, turn ids, texts), so re-delivering the same exchange yields the
  same chunk id and the queue can drop the duplicate;
- `Chunk.tokens` is `count_turn_tokens(render_chunk(chunk))` (tap.tokens), an upper estimate.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime
from typing import Literal

import msgspec

from tap.records import Message, Source
from tap.tokens import chars_within, count_turn_tokens

__all__ = [
    "Chunk",
    "Role",
    "TRUNCATION_MARK",
    "Turn",
    "chunk_id",
    "chunk_turns",
    "format_date",
    "prepare_turns",
    "render_chunk",
    "render_turn",
    "truncate_turn",
    "turn_id",
    "utc_date",
]

Role = Literal["user", "assistant"]
TRUNCATION_MARK = "[…truncated]"
HARD_CAP_FACTOR = 4
CUT_SLACK = 4096

_ROLES: dict[str, Role] = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "model": "assistant",
    "bot": "assistant",
}
_DEFAULT_SPEAKER: dict[Role, str] = {"user": "User", "assistant": "Assistant"}


class Turn(msgspec.Struct, frozen=True, kw_only=True):
    """One scrubbed user or assistant message, ready for chunking."""

    id: str
    role: Role
    speaker: str
    text: str
    timestamp: float = 0.0


class Chunk(msgspec.Struct, frozen=True, kw_only=True):
    """A window of consecutive turns of one conversation: the unit the gate and extractors see."""

    id: str
    scope: str
    conversation: str
    source: Source
    turns: list[Turn]
    tokens: int


def _digest(*parts: str, size: int = 16) -> str:
    """A short, stable hex digest of the parts (unit-separator joined, so boundaries count)."""
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:size]


def turn_id(conversation: str, index: int, text: str) -> str:
    """The id of a message that arrived without one."""
    return "t_" + _digest(conversation, str(index), text, size=12)


def prepare_turns(messages: Sequence[Message], *, conversation: str = "", max_tokens: int | None = None) -> list[Turn]:
    """User/assistant messages as scrubbed, non-empty turns; system and tool messages are dropped.
    With `max_tokens` (what chunking keeps of a turn: HARD_CAP_FACTOR × chunk_tokens), a longer
    text is cut first, a little past that point (CUT_SLACK characters, so a secret straddling it is
    still recognised and scrubbed whole): a 20 MB paste is not scrubbed, stored and counted in full
    to keep its first few thousand characters."""
    from tap.scrub import scrub  # its patterns and helper process: not for a reader of the queue (`tap status`)

    turns: list[Turn] = []
    for index, message in enumerate(messages):
        role = _ROLES.get(message.role.strip().lower())
        if role is None:
            continue
        content = message.content
        if max_tokens is not None:
            content = content[: chars_within(content, max_tokens) + CUT_SLACK]
        text = scrub(content).strip()
        if not text:
            continue
        turns.append(
            Turn(
                id=message.id or turn_id(conversation, index, text),
                role=role,
                speaker=message.name.strip() or _DEFAULT_SPEAKER[role],
                text=text,
                timestamp=message.timestamp,
            )
        )
    return turns


def utc_date(timestamp: float) -> date | None:
    """The UTC calendar day of a POSIX timestamp; None when unknown (<= 0) or out of range."""
    if not timestamp > 0:
        return None
    try:
        return datetime.fromtimestamp(timestamp, UTC).date()
    except (OverflowError, OSError, ValueError):
        return None


def format_date(timestamp: float) -> str:
    """ISO date (UTC) of a POSIX timestamp; empty when the timestamp is unknown."""
    day = utc_date(timestamp)
    return day.isoformat() if day else ""


def render_turn(turn: Turn) -> str:
    """`[id] Speaker (YYYY-MM-DD): text` (the date is left out when unknown)."""
    date = format_date(turn.timestamp)
    when = f" ({date})" if date else ""
    return f"[{turn.id}] {turn.speaker}{when}: {turn.text}"


def render_chunk(chunk: Chunk) -> str:
    """The chunk as extractors see it: one labelled line per turn."""
    return "\n".join(render_turn(turn) for turn in chunk.turns)


def chunk_id(scope: str, conversation: str, turns: Iterable[Turn]) -> str:
    """Deterministic chunk id from scope, conversation and the turns' ids and texts."""
    parts = [scope, conversation]
    for turn in turns:
        parts += [turn.id, turn.text]
    return "c_" + _digest(*parts)


def truncate_turn(turn: Turn, max_tokens: int) -> Turn:
    """The turn with its text cut so its rendered line costs at most `max_tokens` tokens."""
    within = chars_within(turn.text, max_tokens)  # no longer prefix can fit: the search stays there
    if within == len(turn.text) and _cost(turn) <= max_tokens:
        return turn
    low, high = 0, within
    while low < high:  # longest prefix whose rendering (with the marker) still fits
        middle = (low + high + 1) // 2
        if _cost(_with_text(turn, turn.text[:middle])) <= max_tokens:
            low = middle
        else:
            high = middle - 1
    return _with_text(turn, turn.text[:low])


def _with_text(turn: Turn, prefix: str) -> Turn:
    return msgspec.structs.replace(turn, text=f"{prefix.rstrip()} {TRUNCATION_MARK}")


def _cost(turn: Turn) -> int:
    """Tokens one rendered turn adds to a chunk (its line plus the newline)."""
    return count_turn_tokens(render_turn(turn)) + 1


def _windows(costs: Sequence[int], chunk_tokens: int, overlap_tokens: int) -> list[range]:
    """Index ranges of the windows: greedy fill, then step back over whole turns for overlap."""
    windows: list[range] = []
    start = 0
    while start < len(costs):
        end, total = start, 0
        while end < len(costs) and (end == start or total + costs[end] <= chunk_tokens):
            total += costs[end]
            end += 1
            if total > chunk_tokens:  # an oversized turn stands alone
                break
        windows.append(range(start, end))
        start = _overlap_start(costs, start, end, chunk_tokens, overlap_tokens)
    return windows


def _overlap_start(costs: Sequence[int], start: int, end: int, chunk_tokens: int, overlap: int) -> int:
    """First turn of the next window: as many trailing turns of this one as fit in `overlap`.

    The carried turns leave room for the next new turn, so every window brings at least one.
    """
    if end >= len(costs) or costs[end] > chunk_tokens:
        return end
    next_start, carried = end, 0
    room = min(overlap, chunk_tokens - costs[end])
    while next_start - 1 > start and carried + costs[next_start - 1] <= room:
        next_start -= 1
        carried += costs[next_start]
    return next_start


def chunk_turns(
    turns: Sequence[Turn],
    *,
    scope: str,
    conversation: str,
    source: Source,
    chunk_tokens: int = 500,
    overlap_tokens: int = 100,
) -> list[Chunk]:
    """Overlapping windows of whole turns of about `chunk_tokens` tokens each."""
    if chunk_tokens <= 0 or not 0 <= overlap_tokens < chunk_tokens:
        raise ValueError("need chunk_tokens > 0 and 0 <= overlap_tokens < chunk_tokens")
    capped = [truncate_turn(turn, HARD_CAP_FACTOR * chunk_tokens) for turn in turns]
    costs = [_cost(turn) for turn in capped]
    chunks: list[Chunk] = []
    for window in _windows(costs, chunk_tokens, overlap_tokens):
        members = [capped[i] for i in window]
        chunk = Chunk(
            id=chunk_id(scope, conversation, members),
            scope=scope,
            conversation=conversation,
            source=source,
            turns=members,
            tokens=0,
        )
        chunks.append(msgspec.structs.replace(chunk, tokens=count_turn_tokens(render_chunk(chunk))))
    return chunks
