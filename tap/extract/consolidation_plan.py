"""Consolidation planning: which memories of a scope to merge, which to archive (pure, no I/O).

Given a scope's active memories, the vectors of its statements and `[consolidate]`, `plan_scope`
returns what tap.extract.consolidation applies:

- **merge groups** (near-duplicates; each becomes one new memory citing every member's sources,
  the members kept as its history):
  - statements: same kind, same subject (tap.extract.reconcile.subject_key), the same numbers, names,
    negation and slot value, cosine >= `merge_similarity`, and one saying nothing the other does
    not (all of its words are in the other). Cosine alone is not enough: "runs on Mondays"
    and "runs on Tuesdays" are 0.90 apart, "has two kids" and "has three kids" 0.91, while "lives
    in Lisbon" and "lives in Lisbon with their partner" are 0.92. Events and plans only merge when
    their words are the same (two runs on two days are two events). Groups are stars around a seed
    (the most important, longest statement first), never chains: every member is a near-duplicate
    of the seed itself;
  - excerpts (the verbatim layer): the same words said again by the same speaker;
  - never: memories of different kinds, a memory in an unresolved conflict (the user settles that);
- **archive**: memories of importance <= `archive_max_importance` that were neither recalled nor
  restated (nor edited) for `archive_after_days`, statements only unless `archive_excerpts`; never
  an instruction or a memory in conflict. Then, with `max_per_scope`, the least valuable of the
  rest (importance, recalls, how recently used; excerpts before statements) until the scope fits.

The merged memory: the content, kind, slot and conversation of the most informative member (the
most content words, then the newest); sources, tags and merged_from of all; the highest importance;
recall counts summed; `created_at` the earliest, `valid_from` the latest (when it was last said).
Its id is derived from its members, so applying a plan twice writes it once.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence

import msgspec
import numpy as np

from tap.config import ConsolidateConfig
from tap.language.rules.text import content_words
from tap.language.statements import subject_key, words
from tap.records import Memory

DAY_S = 86400.0
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_NAME = re.compile(r"(?<=\s)[A-Z][\w'’-]+")
_NEGATION = re.compile(
    r"\b(?:not|no|never|don't|doesn't|didn't|isn't|aren't|wasn't|won't|can't|cannot|nor|without)\b", re.I
)
EXACT_ONLY = ("event", "plan", "episode")
NEVER_ARCHIVED = ("instruction",)
BLOCK = 512  # rows of the similarity matrix computed at once


class MergeGroup(msgspec.Struct, kw_only=True):
    """Members (ids, in order) that become one memory `into`; `content` is what it will say."""

    scope: str
    into: str
    members: list[str]
    content: str
    kind: str


class ArchivePick(msgspec.Struct, kw_only=True):
    """A memory to archive and why ("stale" or "cap")."""

    id: str
    scope: str
    content: str
    reason: str


class ScopePlan(msgspec.Struct, kw_only=True):
    """Everything consolidation will do to one scope (nothing written yet)."""

    scope: str
    groups: list[MergeGroup] = msgspec.field(default_factory=list)
    archive: list[ArchivePick] = msgspec.field(default_factory=list)
    merged: dict[str, Memory] = msgspec.field(default_factory=dict)
    """The new memory of each group, by its id."""


def _signature(memory: Memory) -> tuple[frozenset[str], frozenset[str], bool]:
    content = memory.content
    return (
        frozenset(_NUMBER.findall(content)),
        frozenset(n.lower() for n in _NAME.findall(" " + content)),
        bool(_NEGATION.search(content)),
    )


_ARTICLES = frozenset({"a", "an", "the", "s"})


def _says_no_more(a: Memory, b: Memory) -> bool:
    """Whether one of the two says nothing the other does not (each of its words, articles aside,
    is in the other: "lives in Lisbon" and "lives in Lisbon with their partner", not "likes cats"
    and "likes dogs", nor "note one" and "note two")."""
    wa, wb = set(words(a.content)) - _ARTICLES, set(words(b.content)) - _ARTICLES
    small, large = (wa, wb) if len(wa) <= len(wb) else (wb, wa)
    return bool(small) and small <= large


def duplicates(a: Memory, b: Memory, similarity: float, cfg: ConsolidateConfig) -> bool:
    """Whether two active statements of a scope are near-duplicates (see the module docstring)."""
    if a.kind != b.kind or similarity < cfg.merge_similarity:
        return False
    if a.kind in EXACT_ONLY:
        return words(a.content) == words(b.content) and _day(a) == _day(b)
    if a.slot and a.slot == b.slot and a.slot_part == b.slot_part and a.slot_value != b.slot_value:
        return False
    if subject_key(a.content) != subject_key(b.content) or _signature(a) != _signature(b):
        return False
    return _says_no_more(a, b)


def _day(memory: Memory) -> int:
    return int((memory.valid_from or memory.created_at) // DAY_S)


def _in_conflict(memory: Memory, active: set[str]) -> bool:
    return any(i in active for i in memory.conflicts_with)


def _seed_order(memory: Memory) -> tuple[int, int, float, str]:
    return (
        -memory.importance,
        -len(content_words(memory.content)),
        -(memory.valid_from or memory.created_at),
        memory.id,
    )


def statement_groups(
    statements: Sequence[Memory], vectors: Mapping[str, Sequence[float]], cfg: ConsolidateConfig
) -> list[list[Memory]]:
    """Star-shaped groups of near-duplicate statements (two or more members each)."""
    usable = [m for m in statements if m.id in vectors]
    if len(usable) < 2:
        return []
    usable.sort(key=_seed_order)
    raw = np.asarray([vectors[m.id] for m in usable], dtype=np.float32)
    norms = np.linalg.norm(raw, axis=1, keepdims=True)
    matrix = (raw / np.where(norms == 0, 1.0, norms)).astype(np.float32)
    near: dict[int, list[tuple[int, float]]] = {}
    for start in range(0, len(usable), BLOCK):
        sims = matrix[start : start + BLOCK] @ matrix.T
        rows, cols = np.nonzero(sims >= cfg.merge_similarity)
        for row, col in zip(rows.tolist(), cols.tolist(), strict=True):
            i = start + row
            if i != col:
                near.setdefault(i, []).append((col, float(sims[row, col])))
    taken: set[int] = set()
    groups: list[list[Memory]] = []
    for i, seed in enumerate(usable):
        if i in taken or i not in near:
            continue
        members = [j for j, s in sorted(near[i]) if j not in taken and duplicates(seed, usable[j], s, cfg)]
        if members:
            taken.update([i, *members])
            groups.append([seed, *(usable[j] for j in members)])
    return groups


def excerpt_groups(excerpts: Sequence[Memory]) -> list[list[Memory]]:
    """Excerpts whose words are the same (the same speaker saying the same thing again)."""
    by_words: dict[tuple[str, ...], list[Memory]] = {}
    for memory in excerpts:
        key = tuple(words(memory.content))
        if key:
            by_words.setdefault(key, []).append(memory)
    return [sorted(group, key=_seed_order) for group in by_words.values() if len(group) > 1]


def merged_id(scope: str, members: Sequence[str]) -> str:
    """The id of the memory a group merges into: derived from its members, so a replay finds it."""
    digest = hashlib.sha256("\x1f".join([scope, *sorted(members)]).encode()).hexdigest()[:20]
    return "c_" + digest


def merge(members: Sequence[Memory], *, now: float) -> Memory:
    """The one memory a group becomes (see the module docstring); members as they are."""
    best = max(members, key=lambda m: (len(content_words(m.content)), m.valid_from or m.created_at, m.id))
    return msgspec.structs.replace(
        best,
        id=merged_id(best.scope, [m.id for m in members]),
        importance=max(m.importance for m in members),
        tags=list(dict.fromkeys(t for m in members for t in m.tags)),
        sources=list(dict.fromkeys(s for m in members for s in m.sources)),
        created_at=min(m.created_at for m in members),
        updated_at=now,
        valid_from=max(m.valid_from or m.created_at for m in members),
        supersedes="",
        superseded_by="",
        access_count=sum(m.access_count for m in members),
        last_accessed=max(m.last_accessed for m in members),
        archived_at=0.0,
        conflicts_with=[],
        merged_from=[m.id for m in members],
    )


def last_used(memory: Memory) -> float:
    """When a memory was last recalled, restated or edited (its creation, if never)."""
    return max(memory.last_accessed, memory.updated_at, memory.created_at)


def stale(memory: Memory, cfg: ConsolidateConfig, now: float) -> bool:
    """Whether the memory is archived as stale (see the module docstring)."""
    if cfg.archive_after_days <= 0 or memory.importance > cfg.archive_max_importance:
        return False
    if memory.kind in NEVER_ARCHIVED or (memory.kind == "episode" and not cfg.archive_excerpts):
        return False
    return now - last_used(memory) >= cfg.archive_after_days * DAY_S


def value(memory: Memory, now: float) -> float:
    """How much a memory is worth keeping in recall, for the cap: importance first, then recalls
    and how recently it was used; excerpts below statements of the same importance."""
    recalls = min(1.0, math.log1p(memory.access_count) / 3)
    recency = max(0.0, 1.0 - (now - last_used(memory)) / (365 * DAY_S))
    return memory.importance + 0.5 * (memory.kind != "episode") + recalls + recency


def plan_scope(
    scope: str,
    active: Sequence[Memory],
    vectors: Mapping[str, Sequence[float]],
    cfg: ConsolidateConfig,
    *,
    now: float,
) -> ScopePlan:
    """What to merge and archive in one scope (its active memories; vectors of its statements)."""
    plan = ScopePlan(scope=scope)
    live = {m.id for m in active}
    free = [m for m in active if not _in_conflict(m, live)]
    statements = [m for m in free if m.kind != "episode"]
    excerpts = [m for m in free if m.kind == "episode"]
    for members in [*statement_groups(statements, vectors, cfg), *excerpt_groups(excerpts)]:
        new = merge(members, now=now)
        plan.merged[new.id] = new
        plan.groups.append(
            MergeGroup(scope=scope, into=new.id, members=[m.id for m in members], content=new.content, kind=new.kind)
        )
    merged_away = {i for g in plan.groups for i in g.members}
    rest = [m for m in free if m.id not in merged_away]
    picked = {m.id for m in rest if stale(m, cfg, now)}
    plan.archive = [
        ArchivePick(id=m.id, scope=scope, content=m.content, reason="stale") for m in rest if m.id in picked
    ]
    if cfg.max_per_scope:
        remaining = len(active) - len(merged_away) + len(plan.groups) - len(picked)
        excess = remaining - cfg.max_per_scope
        if excess > 0:
            candidates = [m for m in rest if m.id not in picked and m.kind not in NEVER_ARCHIVED]
            candidates.sort(key=lambda m: (value(m, now), m.created_at, m.id))
            plan.archive += [
                ArchivePick(id=m.id, scope=scope, content=m.content, reason="cap") for m in candidates[:excess]
            ]
    return plan
