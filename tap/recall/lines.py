"""Values of one thing over time are shown together, the newest first, the older ones as earlier.

Supersession misses updates it cannot read ("rating went up to 1912" after "classical rating is
1840"), and then both are active. Recall finds such a *line* among the statements it ranked: those
that answer the question about as well as the best one does (within ANSWER_BAND of its score), are
about the same holder and share a distinctive word, directly or through another of them; an event
belongs to a line only as its newest member (what happened is history, not a value). For a
question about the present, the newest member of each line moves up to the line's first place;
the block shows a line's older members under its newest, each with its date and marked earlier
(tap.recall.engine's packer). The model reading the block then answers with the current value
whatever the wording of the update, and still sees what it was before.

Invariants: pure; only statements form lines (an excerpt stands alone, and so does a statement in
an unresolved conflict: tap cannot tell which of the two is current); moving a line's newest up
keeps the same memories and the same scores by place (only the memories it passes move down, one
place each).
"""

from __future__ import annotations

from collections.abc import Sequence

from tap.language.rules.text import content_words
from tap.records import Memory

__all__ = ["ANSWER_BAND", "answer_lines", "with_lines"]

ANSWER_BAND = 0.3
"""A statement scored at least this share of the best statement's score answers the question too."""
_NOT_DISTINCTIVE = frozenset({"user", "users", "user's"})


def _stamp(memory: Memory) -> float:
    return memory.valid_from or memory.created_at


def _holder(memory: Memory) -> str:
    """Whom a statement is about: its holder, else its opening words."""
    return memory.holder or " ".join(memory.content.lower().split()[:2])


def _words(memory: Memory) -> frozenset[str]:
    return frozenset(content_words(memory.content)) - _NOT_DISTINCTIVE


def answer_lines(ranked: Sequence[tuple[Memory, float]]) -> dict[str, str]:
    """The lines among the ranked statements (see the module docstring): for each member, its
    line's key (the id of its best-ranked member); statements in no line are left out."""
    # a memory in a conflict is shown as contradicted, never as the earlier value of the other
    import os
    if os.environ.get("TAP_NO_LINES") == "1":
        return {}
    statements = [(m, s) for m, s in ranked if m.kind != "episode" and not m.conflicts_with]
    if len(statements) < 2:
        return {}
    best = max(s for _, s in statements)
    answers = [m for m, s in statements if s >= ANSWER_BAND * best]
    words = [_words(m) for m in answers]
    parent = list(range(len(answers)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(len(answers)):
        for j in range(i):
            if words[i] & words[j] and _holder(answers[i]) == _holder(answers[j]):
                parent[root(i)] = root(j)
    groups: dict[int, list[Memory]] = {}
    for i, memory in enumerate(answers):
        groups.setdefault(root(i), []).append(memory)
    lines: dict[str, str] = {}
    for group in groups.values():
        newest = max(group, key=lambda m: (_stamp(m), m.id))
        # what happened stays history: an event is a value only as the newest ("moved to Lisbon")
        members = [m for m in group if m.kind != "event" or m is newest]
        if len(members) > 1:
            lines.update((m.id, members[0].id) for m in members)
    return lines


def with_lines(ranked: Sequence[tuple[Memory, float]], lines: dict[str, str]) -> list[tuple[Memory, float]]:
    """The ranking with the newest member of each line moved up to the line's first place (the
    memories in between move down one place each); the scores stay with the places."""
    members: dict[str, list[Memory]] = {}
    for memory, _ in ranked:
        if memory.id in lines:
            members.setdefault(lines[memory.id], []).append(memory)
    order = [memory for memory, _ in ranked]
    for group in members.values():
        newest = max(group, key=lambda m: (_stamp(m), m.id))
        first = min(order.index(m) for m in group)
        order.remove(newest)
        order.insert(first, newest)
    return [(memory, score) for memory, (_, score) in zip(order, ranked, strict=True)]
