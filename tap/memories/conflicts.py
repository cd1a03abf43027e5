"""Contradictions tap cannot settle on its own: both memories kept, marked, shown, settled by the user.

When a new statement gives a single-valued attribute another value than a stored one, reconcile
(tap.extract.reconcile) normally lets the newer replace the older. Two cases are left to the user instead
(`ambiguous_change`):
- the two were stated together (the same moment: one turn, "I work at Google and at Stripe"), so
  neither is newer;
- the attribute is one a person often holds two of at once (CO_HELD: an employer — a second job, a
  consultancy on the side) and the new statement carries no sign of a change ("now", "moved",
  "switched", "left", "used to", "joined", "started at", "new job", ...).
Then both memories stay active and each names the other in `conflicts_with`. With an LLM
extractor, the model may answer `conflict` for the same reason.

Until the user settles it, recall shows both (`with_partners` pulls the other one in next to the
first, and the block marks each line, under its date). `tap memories conflicts` lists the pairs;
`tap memories resolve ID --keep ID` keeps one (the other is superseded by it, kept as history) or
`--both` keeps both (the mark goes). Consolidation never merges or archives a memory in conflict.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import msgspec

from tap.candidates import CandidateMemory
from tap.language.statements import takes_up_new_value
from tap.ports import MemoryStore
from tap.records import Memory

CO_HELD = ("employer",)
"""Attributes a person often holds two values of at once: a new value without a change cue is
a conflict, not an update."""
CHANGE_TAGS = ("update", "now")
SAME_MOMENT_S = 1.0


class Conflict(msgspec.Struct, kw_only=True):
    """Two active memories that contradict each other; `since`: when the later one was stored."""

    a: Memory
    b: Memory
    since: float


def ambiguous_change(candidate: CandidateMemory, newest: Memory, conversation: str) -> bool:
    """Whether a slot statement with another value than `newest` (the newest stored statement of the
    slot, not newer than the candidate) cannot be told to replace it. Stated together means one
    turn; or, across conversations (or when the candidate's is unknown), stamps under SAME_MOMENT_S
    apart. Two turns of one conversation are in order whatever their stamps (a session's one date,
    or none: the turns of a plain-text log are stamped as they are extracted, microseconds apart)."""
    if candidate.correction or candidate.retracts or any(t in candidate.tags for t in CHANGE_TAGS):
        return False
    if set(candidate.turn_ids) & set(newest.sources):
        return True
    in_order = bool(conversation) and newest.conversation == conversation
    if not in_order and abs(candidate.valid_from - newest.valid_from) < SAME_MOMENT_S:
        return True
    return candidate.slot.rsplit("|", 1)[-1] in CO_HELD and not takes_up_new_value(candidate.content)


def link(memory: Memory, others: Sequence[Memory]) -> list[Memory]:
    """Mark `memory` and `others` as conflicting with each other (in place); returns the others,
    whose records must be rewritten."""
    for other in others:
        if other.id not in memory.conflicts_with:
            memory.conflicts_with = (*memory.conflicts_with, other.id)
        if memory.id not in other.conflicts_with:
            other.conflicts_with = (*other.conflicts_with, memory.id)
    return list(others)


def pairs(memories: Sequence[Memory], fetch: Callable[[Sequence[str]], list[Memory]]) -> list[Conflict]:
    """Each unresolved conflict once, newest first, from the memories that name one (a partner that
    is no longer active ends the conflict)."""
    by_id = {m.id: m for m in memories}
    missing = [i for m in memories for i in m.conflicts_with if i not in by_id]
    by_id.update((m.id, m) for m in fetch(list(dict.fromkeys(missing))))
    found: dict[tuple[str, str], Conflict] = {}
    for memory in memories:
        for other_id in memory.conflicts_with:
            other = by_id.get(other_id)
            if other is None or not other.active or not memory.active:
                continue
            a, b = sorted((memory, other), key=lambda m: (m.created_at, m.id))
            found.setdefault((a.id, b.id), Conflict(a=a, b=b, since=max(a.created_at, b.created_at)))
    return sorted(found.values(), key=lambda c: (-c.since, c.a.id))


def live(memories: Sequence[Memory], fetch: Callable[[Sequence[str]], list[Memory]]) -> list[Memory]:
    """The memories as the admin API and the CLI show them: `conflicts_with` names only partners
    that are still active, and only on an active memory (a conflict ends when either side is settled,
    superseded, archived or forgotten, as `pairs` reads it; the stored marks stay, so restoring an
    archived side brings the conflict back). Copies where that changes anything."""
    named = {i for m in memories for i in m.conflicts_with}
    if not named:
        return list(memories)
    by_id = {m.id: m for m in memories}
    active = {i for i in named if i in by_id and by_id[i].active}
    active |= {m.id for m in fetch([i for i in sorted(named) if i not in by_id]) if m.active}
    out: list[Memory] = []
    for memory in memories:
        partners = tuple(i for i in memory.conflicts_with if i in active) if memory.active else ()
        out.append(
            memory if partners == memory.conflicts_with else msgspec.structs.replace(memory, conflicts_with=partners)
        )
    return out


def unresolved(marked: Sequence[Memory], fetch: Callable[[Sequence[str]], list[Memory]]) -> list[Conflict]:
    """The unresolved conflicts among the active memories that name a partner (`marked`), newest
    first, each side as `live` shows it; `fetch` reads partners by id (one not active ends it)."""
    found = pairs(marked, fetch)
    sides = live([m for c in found for m in (c.a, c.b)], fetch)
    return [msgspec.structs.replace(c, a=a, b=b) for c, a, b in zip(found, sides[::2], sides[1::2], strict=True)]


class Settled(msgspec.Struct, kw_only=True):
    """What `resolve` did: the memory kept, and the one it superseded (None when both were kept)."""

    kept: Memory
    superseded: Memory | None = None
    also_kept: Memory | None = None


def resolve(
    store: MemoryStore, keep: str, drop: str, *, both: bool = False, now: Callable[[], float] = time.time
) -> Settled:
    """Settle the conflict between `keep` and `drop`: `drop` is superseded by `keep` (kept as
    history), or with `both` the two stay active and the mark goes. KeyError for an unknown id,
    ValueError when the two are not in conflict."""
    found = {m.id: m for m in store.get([keep, drop])}
    for memory_id in (keep, drop):
        if memory_id not in found:
            raise KeyError(memory_id)
    kept, other = found[keep], found[drop]
    if drop not in kept.conflicts_with and keep not in other.conflicts_with:
        raise ValueError(f"{keep} and {drop} are not in conflict (`tap memories conflicts` lists the pairs)")
    if not kept.current or not other.current:
        raise ValueError(f"{keep} and {drop} must both be current versions")
    at = now()
    kept.conflicts_with = tuple(i for i in kept.conflicts_with if i != drop)
    kept.updated_at = at
    if both:
        other.conflicts_with = tuple(i for i in other.conflicts_with if i != keep)
        other.updated_at = at
        store.update_metadata([kept, other])
        return Settled(kept=kept, also_kept=other)
    partners = [m for m in store.get([i for i in other.conflicts_with if i != keep])]
    for partner in partners:  # the dropped memory's other conflicts end with it
        partner.conflicts_with = tuple(i for i in partner.conflicts_with if i != drop)
    other.conflicts_with = ()
    other.superseded_by = kept.id
    other.updated_at = at
    if not kept.supersedes:
        kept.supersedes = other.id  # its history shows what it won over
    store.update_metadata([kept, other, *partners])
    return Settled(kept=kept, superseded=other)


def with_partners(
    ranked: list[tuple[Memory, float]], fetch: Callable[[Sequence[str]], list[Memory]]
) -> list[tuple[Memory, float]]:
    """The ranking with each conflicting memory's partners placed right after it (fetched when the
    search did not find them), so a block that shows one shows the other, rather than picking one.
    A partner that is no longer active (settled, superseded, archived, forgotten) no longer counts:
    the memory comes back as a copy without it, so the block does not mark it."""
    wanted = [i for m, _ in ranked for i in m.conflicts_with]
    if not wanted:
        return ranked
    by_id = {m.id: m for m, _ in ranked}
    missing = [i for i in dict.fromkeys(wanted) if i not in by_id]
    if missing:
        by_id.update((m.id, m) for m in fetch(missing) if m.active)
    out: list[tuple[Memory, float]] = []
    placed: set[str] = set()

    def place(memory: Memory, score: float) -> None:
        live = tuple(i for i in memory.conflicts_with if i in by_id)
        if live != memory.conflicts_with:
            memory = msgspec.structs.replace(memory, conflicts_with=live)
        out.append((memory, score))
        placed.add(memory.id)

    for memory, score in ranked:
        if memory.id in placed:
            continue
        place(memory, score)
        for partner_id in memory.conflicts_with:
            partner = by_id.get(partner_id)
            if partner is not None and partner.id not in placed:
                place(partner, score)
    return out
