"""A line of statements is shown together, newest first: its older values follow as "earlier".

Extraction ties a statement to the older ones that say the same kind of thing about the same
subject (`Memory.topic`: "rating 1840" → "rating went up to 1912"), also when it cannot tell
that the newer one replaces them. Recall shows such a line where its best-ranked statement would
stand, the newest first and at most MAX_EARLIER older ones after it, so the model reading the
block sees the current value first and what it was before, with dates, even when supersession
missed the update.

Invariants: pure; only statements form lines (an excerpt stands alone); no memory is added, and
of a line only the older members past MAX_EARLIER are left out; each older member scores just
below the member before it.
"""

from __future__ import annotations

from collections.abc import Sequence

from tap.records import Memory

__all__ = ["MAX_EARLIER", "line_of", "with_lines"]

MAX_EARLIER = 2
"""Older values of a line shown after its newest (more would crowd out other memories)."""
_BELOW = 0.999


def line_of(memory: Memory) -> str:
    """The key of the memory's line: the line's first statement ('' for an excerpt)."""
    return "" if memory.kind == "episode" else memory.topic or memory.id


def _stamp(memory: Memory) -> float:
    return memory.valid_from or memory.created_at


def with_lines(ranked: Sequence[tuple[Memory, float]]) -> list[tuple[Memory, float]]:
    """The ranking with each line gathered at its best-ranked member's place, newest first."""
    members: dict[str, list[tuple[Memory, float]]] = {}
    for memory, score in ranked:
        key = line_of(memory)
        if key:
            members.setdefault(key, []).append((memory, score))
    if all(len(group) < 2 for group in members.values()):
        return list(ranked)
    out: list[tuple[Memory, float]] = []
    placed: set[str] = set()
    for memory, score in ranked:
        key = line_of(memory)
        group = members.get(key, [])
        if len(group) < 2:
            out.append((memory, score))
            continue
        if key in placed:
            continue
        placed.add(key)
        newest_first = sorted(group, key=lambda pair: (-_stamp(pair[0]), pair[0].id))[: 1 + MAX_EARLIER]
        for index, (member, _) in enumerate(newest_first):
            out.append((member, score * _BELOW**index))
    return out
