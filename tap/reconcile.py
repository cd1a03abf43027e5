"""Reconcile: decide what each new candidate memory does to the store (add / update / supersede / noop).

Rules (no LLM; DESIGN.md §6), against the most similar active memories of the same scope:
- cosine ≥ `duplicate_similarity` → **noop**: the existing memory gains the candidate's source
  turns and the higher importance (repeated facts matter more), nothing new is written;
- cosine ≥ `supersede_similarity`, same kind (not an event or an episode: those accumulate),
  about the same subject (same first word, half the words shared, and only a slot changed: at
  most MAX_CHANGED_WORDS words, or a quarter of the shorter statement, on either side), and not
  older than the existing one → **supersede**: a new version replaces it; the old one stays,
  marked. "Ana works as a nurse at Santa Maria" → "… at São José" is a new version; "moving the
  billing service to Postgres next Monday" and "moving the search index to Kafka next Friday"
  are two facts;
- otherwise → **add**.
With an LLM provider the same decisions come from one batched call per chunk (tap.providers);
`apply` carries out decisions from either source, non-destructively.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import msgspec

from tap.config import ExtractConfig
from tap.errors import ProviderError
from tap.records import Hit, Memory

Action = str
_WORD = re.compile(r"[^\W_]+")
NON_SUPERSEDING = ("event", "episode")
MAX_CHANGED_WORDS = 2


class Plan(msgspec.Struct, kw_only=True):
    """What to do with one candidate: the action and the existing memory it concerns."""

    action: Action
    target: Memory | None = None
    content: str = ""


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def same_subject(a: str, b: str) -> bool:
    """Crude subject match: same first word, at least half of the words shared, few words changed."""
    wa, wb = _words(a), _words(b)
    if not wa or not wb or wa[0] != wb[0]:
        return False
    sa, sb = set(wa), set(wb)
    shorter = max(1, min(len(sa), len(sb)))
    changed = max(len(sa - sb), len(sb - sa))
    return len(sa & sb) / shorter >= 0.5 and changed <= max(MAX_CHANGED_WORDS, shorter // 4)


def decide_by_rules(content: str, kind: str, valid_from: float, similar: Sequence[Hit], cfg: ExtractConfig) -> Plan:
    """The rules decision for one candidate given its nearest active memories (best first)."""
    if not similar:
        return Plan(action="add")
    best = similar[0]
    if best.score >= cfg.duplicate_similarity:
        return Plan(action="noop", target=best.memory)
    old = best.memory
    if (
        best.score >= cfg.supersede_similarity
        and kind == old.kind
        and kind not in NON_SUPERSEDING
        and valid_from >= old.valid_from
        and same_subject(content, old.content)
    ):
        return Plan(action="supersede", target=old, content=content)
    return Plan(action="add")


def plan_from_decision(action: str, target_id: str, content: str, similar: Sequence[Memory]) -> Plan:
    """Turn an LLM decision into a Plan, refusing targets the model was not shown."""
    if action == "add":
        return Plan(action="add")
    by_id = {m.id: m for m in similar}
    if target_id not in by_id:
        raise ProviderError(f"reconcile chose unknown memory id {target_id!r} for {action}", retryable=True)
    return Plan(action=action, target=by_id[target_id], content=content)
