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

import os
from collections.abc import Sequence

from tap.language.probes import distinctive_words
from tap.records import Memory

__all__ = ["line_of", "with_lines"]


def line_of(memory: Memory) -> str:
    """The key of the memory's line: the line's first statement ('' for an excerpt)."""
    return "" if memory.kind == "episode" else memory.topic or memory.id


def _stamp(memory: Memory) -> float:
    return memory.valid_from or memory.created_at


ANSWER_BAND = 0.3
"""A statement scored at least this share of the best statement's score answers the question too."""


def _holder(memory: Memory) -> str:
    return memory.holder or " ".join(memory.content.lower().split()[:2])


def answer_lines(ranked: Sequence[tuple[Memory, float]]) -> dict[str, str]:
    """Lines found at recall: the statements that answer the question about as well as the best
    one (within ANSWER_BAND of its score), about the same holder, sharing a distinctive word,
    directly or through another such statement. Returns each one's line key (the first one's id)."""
    statements = [(m, s) for m, s in ranked if m.kind != "episode"]
    if len(statements) < 2:
        return {}
    best = max(s for _, s in statements)
    answers = [m for m, s in statements if s >= ANSWER_BAND * best]
    words = [distinctive_words(m.content) for m in answers]
    key: dict[str, str] = {}
    for i, memory in enumerate(answers):
        for j in range(i):
            if _holder(memory) == _holder(answers[j]) and words[i] & words[j]:
                key[memory.id] = key.get(answers[j].id, answers[j].id)
                key.setdefault(answers[j].id, key[memory.id])
                break
    return key


def with_lines(ranked: Sequence[tuple[Memory, float]]) -> list[tuple[Memory, float]]:
    """The ranking with the newest member of each line moved up to the line's first place (the
    memories in between move down one place each); the scores stay with the places."""
    found = answer_lines(ranked) if os.environ.get("TAP_ANSWER_LINES") == "1" else {}
    members: dict[str, list[Memory]] = {}
    for memory, _ in ranked:
        key = found.get(memory.id) or (line_of(memory) if os.environ.get("TAP_STORED_LINES", "1") == "1" else "")
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
