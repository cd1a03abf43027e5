"""A current statement brings the verbatim turn of the value it replaced into the block, after it.

When a newer statement supersedes an older one ("my favourite BBQ sauce is Sweet Baby Ray's" →
"I'm obsessed with Kansas City Masterpiece now"), the old statement is history: it never enters a
block. But "what do I use now?" is often asked by someone who also wants to know what changed, and
a question about the change itself ("how many bikes do I own now?" after "I have three bikes",
"which lens did I buy most recently?") needs both values. Ranking for "now" puts the old value's
excerpt (the verbatim passage of the old turn, tagged `outdated` when the statement was replaced;
tap.extract.pipeline) below the new value on purpose, and it was often ranked out of the block or not
retrieved at all. So each statement in the ranking that replaced an older one brings that
statement's excerpt along (`with_history`):

- the partner is the passage of the old statement's source turn that ingestion tagged `outdated`
  (a turn the new statement also cites is left alone: it says the new value too); a chain of
  replacements is followed back `HISTORY_DEPTH` versions;
- it is placed right after its statement and the excerpts of the statement's own turns (the new
  value verbatim, which the block packs only if room is left: their turn is already cited), so a
  block that holds the current value has its history next while there is room; its score (what
  orders the block's `memories`, best first) is at most `HISTORY_WEIGHT` of the statement's and
  below those excerpts': the old value is never listed above the new one. An old turn that ranks
  above its statement on its own (a question about the history) stays where it is;
- the superseded statement itself never enters a block: only the active excerpt does, under its
  own (older) date and marked as replaced (tap.recall.engine.render_line);
- only the first `HISTORY_STATEMENTS` statements among the first `HISTORY_RANKS` of the ranking
  that have a history are followed,
  with one read of the replaced versions (the recall engine keeps them in a cache: a replaced
  version never changes) and one read of the excerpts from the store's fast copy of the active
  memories for each version back, which bounds the cost of a recall.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tap.records import OUTDATED_TAG, Memory

__all__ = ["HISTORY_WEIGHT", "with_history"]

HISTORY_WEIGHT = 0.5
HISTORY_DEPTH = 2
HISTORY_STATEMENTS = 6
HISTORY_RANKS = 30  # a statement further down does not reach a block (~10-20 memories)

Fetch = Callable[[Sequence[str]], list[Memory]]
ExcerptIds = Callable[[Memory, str], list[str]]
"""The ids of the excerpts (every passage) of one source turn of a memory."""


def with_history(
    ranked: list[tuple[Memory, float]], versions: Fetch, active: Fetch, excerpt_ids: ExcerptIds
) -> list[tuple[Memory, float]]:
    """The ranking with each replacing statement followed by its own turns' excerpts (the new value
    verbatim) and then the history excerpts (see the module docstring). `fetch` reads memories by
    id, superseded ones included (`versions`), or only active ones, the fast read (`active`)."""
    top = ranked[:HISTORY_RANKS]
    heads = [m for m, _ in top if m.kind != "episode" and m.supersedes][:HISTORY_STATEMENTS]
    if not heads:
        return ranked
    history = _history(heads, versions, active, excerpt_ids)
    if not history:
        return ranked
    position = {m.id: i for i, (m, _) in enumerate(ranked)}
    own = {m.id: score for m, score in ranked}
    moved: set[str] = set()
    follow: dict[str, list[tuple[Memory, float]]] = {}
    for head in heads:
        here = position[head.id]
        olds = [x for x in history.get(head.id, []) if x.id not in moved and position.get(x.id, len(ranked)) > here]
        if not olds:
            continue  # each old turn already ranks above its statement on its own (a question about history)
        turns = set(head.sources)
        news = [
            (m, s)
            for m, s in ranked[here + 1 :]
            if m.kind == "episode" and m.id not in moved and turns & set(m.sources)
        ]
        score = min([own[head.id] * HISTORY_WEIGHT, *(s * 0.999 for _, s in news)])
        for excerpt in olds:
            score = min(score, own.get(excerpt.id, score))
        follow[head.id] = news + [(excerpt, score) for excerpt in olds]
        moved.update(m.id for m, _ in follow[head.id])
    if not follow:
        return ranked
    out: list[tuple[Memory, float]] = []
    for memory, score in ranked:
        if memory.id in moved:
            continue
        out.append((memory, score))
        out += follow.get(memory.id, [])
    return out


def _history(heads: list[Memory], versions: Fetch, active: Fetch, excerpt_ids: ExcerptIds) -> dict[str, list[Memory]]:
    """For each head statement: the `outdated` excerpts of the statements it replaced, newest first."""
    found: dict[str, list[Memory]] = {}
    frontier = {head.id: head for head in heads}  # head id → the version whose predecessor is next
    for _ in range(HISTORY_DEPTH):
        wanted = {head_id: m.supersedes for head_id, m in frontier.items() if m.supersedes}
        if not wanted:
            break
        olds = {m.id: m for m in versions(list(dict.fromkeys(wanted.values())))}
        asks: dict[str, list[tuple[str, str]]] = {}  # head id → (excerpt id, turn)
        next_frontier: dict[str, Memory] = {}
        for head_id, old_id in wanted.items():
            old = olds.get(old_id)
            if old is None or old.kind == "episode":
                continue
            newer = frontier[head_id]
            for turn in old.sources:
                if turn not in newer.sources:
                    asks.setdefault(head_id, []).extend((i, turn) for i in excerpt_ids(old, turn))
            next_frontier[head_id] = old
        ids = list(dict.fromkeys(i for pairs in asks.values() for i, _ in pairs))
        excerpts = {m.id: m for m in active(ids) if m.active and OUTDATED_TAG in m.tags} if ids else {}
        for head_id, pairs in asks.items():
            for excerpt_id, _ in pairs:
                excerpt = excerpts.get(excerpt_id)
                if excerpt is not None and excerpt not in found.get(head_id, []):
                    found.setdefault(head_id, []).append(excerpt)
        frontier = next_frontier
    return found
