"""A line of statements is ranked newest first, and shown with its older values as "earlier".

Extraction ties a statement to the older ones that say the same kind of thing about the same
subject (`Memory.topic`: "rating 1840" → "rating went up to 1912"), also when it cannot tell
that the newer one replaces them. For a question about the present, recall moves the newest
member of a line it found up to the line's first place, and the block shows a line's older
values under its newest, dated and marked earlier (tap.recall.engine's packer), so the model
reading the block sees the current value first and what it was before, even when supersession
missed the update.

Invariants: pure; only statements form lines (an excerpt stands alone); the ranking keeps the same
memories and the same scores by place: a line's newest member moves up, and only the memories it
passes move down, one place each.
"""

from __future__ import annotations

from collections.abc import Sequence

from tap.records import Memory

__all__ = ["line_of", "with_lines"]


def line_of(memory: Memory) -> str:
    """The key of the memory's line: the line's first statement ('' for an excerpt)."""
    return "" if memory.kind == "episode" else memory.topic or memory.id


def _stamp(memory: Memory) -> float:
    return memory.valid_from or memory.created_at


def with_lines(ranked: Sequence[tuple[Memory, float]]) -> list[tuple[Memory, float]]:
    """The ranking with the newest member of each line moved up to the line's first place (the
    memories in between move down one place each); the scores stay with the places."""
    members: dict[str, list[Memory]] = {}
    for memory, _ in ranked:
        key = line_of(memory)
        if key:
            members.setdefault(key, []).append(memory)
    order = [memory for memory, _ in ranked]
    for group in members.values():
        if len(group) < 2:
            continue
        newest = max(group, key=lambda m: (_stamp(m), m.id))
        first = min(order.index(m) for m in group)
        order.remove(newest)
        order.insert(first, newest)
    return [(memory, score) for memory, (_, score) in zip(order, ranked, strict=True)]
