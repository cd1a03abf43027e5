"""The extraction pipeline for one chunk: gate → extract → reconcile → store.

1. free heuristic gate (tap.gate); then, if configured, the LLM gate (Haiku by default);
2. extractor: the configured LLM provider, or the offline rule-based extractor;
3. reconcile each candidate against its most similar active memories (rules thresholds, or one
   batched LLM decision call per chunk) and apply: add / update / supersede / noop;
4. optionally store the chunk itself as an `episode` memory (raw turns, cited). Its whole text is
   indexed for BM25, but its vector comes from its first EPISODE_VECTOR_WORDS words only: the
   episode is most of the embedding work of the offline pipeline (a 500-token chunk is cut to the
   model's 256 tokens anyway), and on LoCoMo the shorter vector costs 0.6 ER_frac points (75.8 →
   75.2, side by side; no episodes at all: 74.0) for 1.4x the ingestion rate (bench/results/locomo.json).

Invariants: processing a chunk twice writes nothing twice (memory ids are derived from the chunk
id and the candidate, and existing ids are skipped), so a crash mid-chunk is safe to redo;
extraction raises on provider failure (it never returns an empty result for an error); every LLM
call is recorded in the cost ledger and refused once the daily budget is spent.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from tap.chunker import Chunk, render_chunk
from tap.config import ExtractConfig
from tap.errors import TapError
from tap.gate import heuristic_gate
from tap.ledger import CostLedger, next_utc_midnight
from tap.ports import Embedder, MemoryStore
from tap.providers import LLMProvider, ProviderCallError, Usage, cost_usd
from tap.reconcile import Plan, decide_by_rules, plan_from_decision
from tap.records import Hit, Memory
from tap.rules import CandidateMemory, RulesExtractor, episode_memory, merge_duplicates

log = logging.getLogger(__name__)
SIMILAR_K = 5
EPISODE_VECTOR_WORDS = 80


def episode_vector_text(content: str) -> str:
    """The part of an episode its vector is computed from: its first EPISODE_VECTOR_WORDS words."""
    words = content.split(" ")
    return content if len(words) <= EPISODE_VECTOR_WORDS else " ".join(words[:EPISODE_VECTOR_WORDS])


class BudgetExhausted(TapError):
    """The daily LLM budget is spent; LLM work resumes at `until`."""

    def __init__(self, spent: float, budget: float, until: float) -> None:
        super().__init__(f"daily LLM budget reached (${spent:.4f} of ${budget:.2f}); paused until UTC midnight")
        self.until = until


def memory_id(chunk_id: str, kind: str, content: str) -> str:
    """Deterministic id of a memory extracted from a chunk (re-processing finds it again)."""
    digest = hashlib.sha256(f"{chunk_id}\x1f{kind}\x1f{content}".encode()).hexdigest()[:20]
    return ("e_" if kind == "episode" else "m_") + digest


class Extraction:
    """Processes chunks into memories; thread-safe for one worker at a time."""

    def __init__(
        self,
        *,
        store: MemoryStore,
        embedder: Embedder,
        config: ExtractConfig,
        ledger: CostLedger,
        gate_provider: LLMProvider | None = None,
        extract_provider: LLMProvider | None = None,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.config = config
        self.ledger = ledger
        self.gate_provider = gate_provider
        self.extract_provider = extract_provider
        self.rules = RulesExtractor()
        self._now = now
        self.counters: Counter[str] = Counter()
        self._prefetched: dict[str, list[CandidateMemory]] = {}

    def plan(self, chunks: Sequence[Chunk]) -> list[list[str]]:
        """Offline pipeline: extract the candidates of these chunks now (`process` takes them from
        here) and return, per chunk, the texts `process` will embed (candidates, episode), so the
        caller can have them embedded ahead (tap.batching.VectorCache.prefetch). [] with an LLM.
        """
        if self.gate_provider is not None or self.extract_provider is not None:
            return []
        self._prefetched = {}
        groups: list[list[str]] = []
        for chunk in chunks:
            if not heuristic_gate(chunk).passed:
                continue
            candidates = self._prefetched[chunk.id] = merge_duplicates(self.rules.extract(chunk))
            texts = [c.content for c in candidates]
            if self.config.store_episodes:
                texts.append(episode_vector_text(episode_memory(chunk).content))
            groups.append(texts)
        return groups

    def process(self, chunk: Chunk) -> str:
        """Run the whole pipeline on one chunk; returns a one-line outcome."""
        self.counters["chunks"] += 1
        gate = heuristic_gate(chunk)
        if not gate.passed:
            self.counters["gated_out_heuristic"] += 1
            return "skipped by the heuristic gate"
        if self.gate_provider is not None:
            verdict = self._llm_gate(chunk)
            if verdict:
                self.counters["gated_out_llm"] += 1
                return f"skipped by the LLM gate: {verdict}"
        self.counters["extracted"] += 1
        prefetched = self._prefetched.pop(chunk.id, None)
        candidates = prefetched if prefetched is not None else merge_duplicates(self._extract(chunk))
        episode = self._episode(chunk) if self.config.store_episodes else None
        ids = [memory_id(chunk.id, c.kind, c.content) for c in candidates]
        asked = ids + ([episode.id] if episode is not None else [])
        existing = {m.id for m in self.store.get(asked)} if asked else set()  # one read for the whole chunk
        actions = self._reconcile(chunk, candidates, ids, existing)
        if episode is not None and episode.id not in existing:
            self.store.add([episode], self.embedder.embed_documents([episode_vector_text(episode.content)]))
            actions["episode"] += 1
        for action, n in actions.items():
            self.counters[action] += n
        return ", ".join(f"{a} {n}" for a, n in sorted(actions.items())) or "nothing to remember"

    # -- LLM calls with the budget ------------------------------------------------------------------

    def _check_budget(self) -> None:
        spent = self.ledger.spent_today()
        if spent >= self.config.daily_budget_usd:
            raise BudgetExhausted(spent, self.config.daily_budget_usd, next_utc_midnight(self._now()))

    def _record(self, usage: Usage, purpose: str) -> None:
        self.ledger.record(
            provider=usage.provider,
            model=usage.model,
            purpose=purpose,
            input_tokens=usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens,
            output_tokens=usage.output_tokens,
            cost_usd=cost_usd(usage),
        )

    @contextmanager
    def _billed(self, purpose: str) -> Iterator[None]:
        """Check the budget first; a failed call that was still billed is recorded too."""
        self._check_budget()
        try:
            yield
        except ProviderCallError as exc:
            if exc.usage is not None:
                self._record(exc.usage, purpose)
            raise

    def _llm_gate(self, chunk: Chunk) -> str:
        """'' when the LLM gate lets the chunk through, else its reason."""
        assert self.gate_provider is not None
        with self._billed("gate"):
            verdict, usage = self.gate_provider.gate(render_chunk(chunk))
        self._record(usage, "gate")
        return "" if verdict.worth else (verdict.reason or "not worth remembering")

    def _extract(self, chunk: Chunk) -> list[CandidateMemory]:
        if self.extract_provider is None:
            return self.rules.extract(chunk)
        existing = self._similar_to_text(chunk, render_chunk(chunk))
        with self._billed("extract"):
            candidates, usage = self.extract_provider.extract(chunk, existing)
        self._record(usage, "extract")
        return candidates

    def _similar_to_text(self, chunk: Chunk, text: str) -> list[Memory]:
        vector = self.embedder.embed_query(text[:2000])
        hits = self.store.vector_search(vector, scope=chunk.scope, k=10)
        return [h.memory for h in hits if h.memory.kind != "episode"]

    # -- reconcile and write ------------------------------------------------------------------------

    def _reconcile(
        self, chunk: Chunk, candidates: list[CandidateMemory], ids: list[str], existing: set[str]
    ) -> Counter[str]:
        """Decide and apply each candidate whose memory id is not `existing` (already written)."""
        actions: Counter[str] = Counter()
        fresh = [c for c, i in zip(candidates, ids, strict=True) if i not in existing]
        actions["already-done"] += len(candidates) - len(fresh)
        if not fresh:
            return actions
        vectors = self.embedder.embed_documents([c.content for c in fresh])
        similar = self._nearest(chunk.scope, vectors)
        plans = self._plans(fresh, similar)
        for candidate, vector, plan in zip(fresh, vectors, plans, strict=True):
            actions[plan.action] += 1
            self._apply(chunk, candidate, vector, plan)
        return actions

    def _nearest(self, scope: str, vectors: Sequence[Sequence[float]]) -> list[list[tuple[Memory, float]]]:
        """The SIMILAR_K most similar active non-episode memories of the scope, for each vector.

        The rules only look at the nearest one, so the store may answer from its fast search as
        soon as it has one (`at_least`); a vector whose answer holds no non-episode memory is asked
        again in full. An LLM is shown all SIMILAR_K, so it always gets the full search.
        """
        k = SIMILAR_K + 3
        at_least = 1 if self.extract_provider is None else k
        found = self.store.vector_search_many(vectors, scope=scope, k=k, at_least=at_least)
        again = [n for n, hits in enumerate(found) if len(hits) < k and all(h.memory.kind == "episode" for h in hits)]
        if again and at_least < k:
            for n, hits in zip(
                again, self.store.vector_search_many([vectors[n] for n in again], scope=scope, k=k), strict=True
            ):
                found[n] = hits
        return [[(h.memory, h.score) for h in hits if h.memory.kind != "episode"][:SIMILAR_K] for hits in found]

    def _plans(self, candidates: list[CandidateMemory], similar: list[list[tuple[Memory, float]]]) -> list[Plan]:
        if self.extract_provider is None:
            return [
                decide_by_rules(c.content, c.kind, c.valid_from, [Hit(memory=m, score=s) for m, s in near], self.config)
                for c, near in zip(candidates, similar, strict=True)
            ]
        shown = [[m for m, _ in near] for near in similar]
        if not any(shown):  # nothing similar is stored: every candidate is new, no call needed
            return [Plan(action="add") for _ in candidates]
        with self._billed("reconcile"):
            decisions, usage = self.extract_provider.reconcile(candidates, shown)
        self._record(usage, "reconcile")
        by_index = {d.candidate: d for d in decisions}
        plans = []
        for index, near in enumerate(shown):
            decision = by_index.get(index)
            if decision is None or (decision.action == "noop" and not decision.target):
                plans.append(Plan(action="add" if decision is None else "noop"))
                continue
            plans.append(plan_from_decision(decision.action, decision.target, decision.content, near))
        return plans

    def _apply(self, chunk: Chunk, candidate: CandidateMemory, vector: Sequence[float], plan: Plan) -> None:
        if plan.action == "noop":
            if plan.target is not None:
                self._bump(plan.target, candidate)
            return
        memory = self._memory(chunk, candidate, plan.content or candidate.content)
        if plan.target is not None and plan.action in ("update", "supersede"):
            memory.supersedes = plan.target.id
            memory.sources = list(dict.fromkeys([*plan.target.sources, *memory.sources]))
            if plan.action == "update":
                memory.created_at = plan.target.created_at
            vector = self.embedder.embed_documents([memory.content])[0] if plan.content else vector
        self.store.add([memory], [vector])
        if plan.target is not None and plan.action in ("update", "supersede"):
            plan.target.superseded_by = memory.id
            plan.target.updated_at = self._now()
            self.store.update_metadata([plan.target])

    def _bump(self, target: Memory, candidate: CandidateMemory) -> None:
        target.sources = list(dict.fromkeys([*target.sources, *candidate.turn_ids]))
        target.importance = max(target.importance, min(5, candidate.importance))
        target.updated_at = self._now()
        self.store.update_metadata([target])

    def _memory(self, chunk: Chunk, candidate: CandidateMemory, content: str) -> Memory:
        now = self._now()
        return Memory(
            id=memory_id(chunk.id, candidate.kind, candidate.content),
            scope=chunk.scope,
            content=content,
            kind=candidate.kind,
            importance=max(1, min(5, candidate.importance)),
            tags=list(candidate.tags),
            source=chunk.source,
            conversation=chunk.conversation,
            sources=list(candidate.turn_ids),
            created_at=now,
            updated_at=now,
            valid_from=candidate.valid_from or now,
            embedder=self.embedder.model_id,
        )

    def _episode(self, chunk: Chunk) -> Memory:
        """The chunk itself as an `episode` memory."""
        episode = episode_memory(chunk)
        return self._memory(chunk, episode, episode.content)
