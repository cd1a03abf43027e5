"""The extraction pipeline for one chunk: gate → extract → reconcile → store.

1. free heuristic gate (tap.language.gate); then, if configured, the LLM gate (Haiku by default);
2. extractor: the configured LLM provider, or the offline rule-based extractor (tap.language.rules),
   whose tentative statements (left out by its rules for their wording alone) are kept only when
   the keep probe (tap.language.probes) says they are worth a memory;
3. reconcile each candidate against the scope's active memories (tap.extract.reconcile: its nearest
   memories, the memories filling the same slot, what it retracts or corrects) and apply: add /
   update / supersede / noop / history / conflict (both kept, each marked as contradicting the
   other: tap.memories.conflicts). Every extractor's candidates go through the same rules
   (`decide`); a model's carry the same annotations as the rules' (tap.llm.schema) and are kept
   inside the invariants (tap.extract.model_candidates). With `[extract] reconcile = "llm"` a
   model's candidates are decided instead by one batched LLM call per chunk, shown the same
   evidence, its answer checked (no target it was not shown) and guarded the same way;
4. with `store_episodes`, the excerpt layer (tap.language.rules.excerpts): every turn that says anything,
   verbatim, in passages, each citing its turn, kind `episode`. Excerpt ids come from the
   conversation and the turn, so the overlap between chunks stores nothing twice; a passage that
   repeats a stored one (tap.near_duplicate: a paste sent again, or repeating itself) is not
   stored again, the stored one cites its turn too.

Invariants: processing a chunk twice writes nothing twice (memory ids are derived from the turns
a candidate cites and the candidate, excerpt ids from the turn, and existing ids are skipped), and
neither does the overlap of the next chunk (`memory_id`), so a crash mid-chunk is safe to redo;
extraction raises on provider failure (it never returns an empty result for an error); every LLM
call is recorded in the cost ledger and refused once the daily budget is spent; nothing is deleted:
superseded memories stay, marked.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import re
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import msgspec

from tap.candidates import CandidateMemory, merge_duplicates
from tap.config import ExtractConfig
from tap.errors import TapError
from tap.extract.costs import CostLedger, next_utc_midnight
from tap.extract.model_candidates import conform, guarded
from tap.extract.reconcile import Evidence, Plan, decide, holds_words, plan_from_decision, slot_mates
from tap.ingest.chunker import Chunk, render_chunk
from tap.language.death import words_for_deceased
from tap.language.forget_requests import forget_request, names_all
from tap.language.gate import heuristic_gate
from tap.language.goal import words_for_goal
from tap.language.holder_alias import aliased_mates
from tap.language.linked_slots import linked_mates
from tap.language.probes import Probes, load_probes
from tap.language.rules import Excerpt, RulesExtractor, turn_excerpts
from tap.language.rules.text import content_words
from tap.llm import ProviderCallError, Usage, cost_usd
from tap.llm.contract import LLMProvider
from tap.memories.conflicts import link
from tap.near_duplicate import repeats
from tap.ports import Embedder, ExtractionStore
from tap.records import MAX_PASSAGES, OUTDATED_TAG, Hit, Memory, excerpt_id

log = logging.getLogger(__name__)
SIMILAR_K = 5
RETRACT_LOOKUP_K = 100  # excerpts hold the same words and are most of a scope: look past them
NEAREST_FETCH = 5 * SIMILAR_K


class BudgetExhausted(TapError):
    """The daily LLM budget is spent; LLM work resumes at `until`."""

    def __init__(self, spent: float, budget: float, until: float) -> None:
        super().__init__(f"daily LLM budget reached (${spent:.4f} of ${budget:.2f}); paused until UTC midnight")
        self.until = until


def memory_id(chunk: Chunk, candidate: CandidateMemory) -> str:
    """Deterministic id of a memory extracted from a chunk (re-processing finds it again).

    It comes from the turns the candidate cites, in their conversation, when it cites any (else
    from the chunk): the next chunk repeats the last turns of this one (the overlap), and a
    statement read again there is the memory already written, also when a later turn has
    superseded it since. With the chunk's id in it, it was a new id, found no active duplicate,
    and was written again, active: "I go climbing on Tuesdays and Thursdays", then "I no longer
    go on Thursdays" two turns later, left both current.
    """
    turns = "\x1e".join(candidate.turn_ids)
    origin = f"{chunk.scope}\x1f{chunk.conversation}\x1f{turns}" if turns else chunk.id
    digest = hashlib.sha256(f"{origin}\x1f{candidate.kind}\x1f{candidate.content}".encode()).hexdigest()[:20]
    return ("e_" if candidate.kind == "episode" else "m_") + digest


def asks_to_forget(chunk: Chunk) -> bool:
    """Whether a user turn of the chunk asks that something be forgotten (tap.language.forget_requests)."""
    return any(turn.role == "user" and forget_request(turn.text) for turn in chunk.turns)


class _ForgetAsk(msgspec.Struct, frozen=True):
    """A user's request, in a chunk, to forget something (tap.language.forget_requests)."""

    scope: str
    conversation: str
    turn_id: str
    at: float
    words: tuple[str, ...]


class Extraction:
    """Processes chunks into memories; thread-safe for one worker at a time."""

    def __init__(
        self,
        *,
        store: ExtractionStore,
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
        self.forget: Callable[[str], Sequence[str]] | None = None
        """Forgets one memory as `tap memories forget` does (tap.memories.service: its versions, the excerpts of
        its turns and the turns themselves); the wiring sets it, for what users ask to forget."""
        self._forget_asks: list[_ForgetAsk] = []  # shared by the worker's copies (copy.copy)
        self._now = now
        self.counters: Counter[str] = Counter()
        self._prefetched: dict[str, list[CandidateMemory]] = {}
        self._outdated: list[tuple[Memory, frozenset[str]]] = []  # replaced statements, the turns that replaced them
        self.probes: Probes | None = load_probes(embedder.model_id, embedder.dimensions)
        """The probes for this embedder's vectors (tap.language.probes); None: the rules alone."""
        self.keep_all_tentative = False
        """Write every tentative statement, whatever the probes say (bench/train_probes.py learns from them)."""

    def plan(self, chunks: Sequence[Chunk]) -> list[list[str]]:
        """Offline pipeline: extract the candidates of these chunks now (`process` takes them from
        here) and return, per chunk, the texts `process` will embed (candidates, episode), so the
        caller can have them embedded ahead (tap.extract.write_batch.VectorCache.prefetch). [] with an LLM.
        """
        if self.gate_provider is not None or self.extract_provider is not None:
            return []
        self._prefetched = {}
        groups: list[list[str]] = []
        for chunk in chunks:
            texts = [e.vector_text for e in turn_excerpts(chunk)] if self.config.store_episodes else []
            candidates = self._prefetched[chunk.id] = merge_duplicates(self.rules.extract(chunk))
            groups.append([c.content for c in candidates] + texts)
        return groups

    def process(self, chunk: Chunk) -> str:
        """Run the whole pipeline on one chunk; returns a one-line outcome."""
        self.counters["chunks"] += 1
        excerpts = turn_excerpts(chunk) if self.config.store_episodes else []
        excerpt_ids = [excerpt_id(chunk.scope, chunk.conversation, e.key) for e in excerpts]
        skipped = self._gate(chunk)
        if skipped:  # the gate decides about statements; the verbatim layer keeps what was said anyway
            self._prefetched.pop(chunk.id, None)
            existing = {m.id for m in self.store.get(excerpt_ids)} if excerpt_ids else set()
            stored = self._add_excerpts(chunk, excerpts, excerpt_ids, existing)
            self.counters["episode"] += stored
            self._note_forget_asks(chunk)
            return skipped + (f"; excerpts {stored}" if stored else "")
        self.counters["extracted"] += 1
        prefetched = self._prefetched.pop(chunk.id, None)
        candidates = prefetched if prefetched is not None else merge_duplicates(self._extract(chunk))
        ids = [memory_id(chunk, c) for c in candidates]
        asked = ids + excerpt_ids
        existing = {m.id for m in self.store.get(asked)} if asked else set()  # one read for the whole chunk
        actions = self._reconcile(chunk, candidates, ids, existing)
        actions["episode"] += self._add_excerpts(chunk, excerpts, excerpt_ids, existing)
        self._mark_outdated()
        self._note_forget_asks(chunk)
        for action, n in actions.items():
            self.counters[action] += n
        return ", ".join(f"{a} {n}" for a, n in sorted(actions.items())) or "nothing to remember"

    def _note_forget_asks(self, chunk: Chunk) -> None:
        """Note what a user turn of the chunk asks to be forgotten ("please forget my address":
        tap.language.forget_requests), for `forget_asked` once the chunk's own writes are in the store."""
        for turn in chunk.turns:
            words = forget_request(turn.text) if turn.role == "user" else ()
            if words:
                self._forget_asks.append(_ForgetAsk(chunk.scope, chunk.conversation, turn.id, turn.timestamp, words))

    def drop_forget_asks(self) -> None:
        """Drop the requests not carried out (their chunks are redone, and ask again)."""
        self._forget_asks.clear()

    def forget_asked(self) -> int:
        """Forget what users asked to be forgotten in the chunks processed since the last call:
        every memory of the scope stated before the request that holds all its words, statements
        and excerpts, as `tap memories forget` does; returns how many memories went. The worker
        calls it after a batch's writes and before the batch's chunks are done, so a request is
        carried out again if tap stops in between, or if this fails (the chunk is redone)."""
        if self.forget is None:
            self._forget_asks.clear()
            return 0
        gone = 0
        while self._forget_asks:
            ask = self._forget_asks[0]
            [hits] = self.store.search_text([" ".join(ask.words)], scope=ask.scope, k=RETRACT_LOOKUP_K, prefix=True)
            for hit in hits:
                memory = hit.memory
                if ask.turn_id in memory.sources or memory.valid_from > ask.at:
                    continue  # the request itself, or what was said after it
                if names_all(memory.content, ask.words):
                    gone += len(self.forget(memory.id))
            self._forget_asks.pop(0)
            log.info("forgot what a user asked to forget in conversation %s", ask.conversation)
        self.counters["forgot"] += gone
        return gone

    def _gate(self, chunk: Chunk) -> str:
        """'' when the chunk goes on to extraction, else why it does not. The free heuristic gate
        saves LLM calls; the rules extractor judges every sentence itself, so it sees every chunk."""
        llm = self.gate_provider is not None or self.extract_provider is not None
        if llm and not heuristic_gate(chunk).passed:
            self.counters["gated_out_heuristic"] += 1
            return "skipped by the heuristic gate"
        if self.gate_provider is not None:
            verdict = self._llm_gate(chunk)
            if verdict:
                self.counters["gated_out_llm"] += 1
                return f"skipped by the LLM gate: {verdict}"
        return ""

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
        return [conform(candidate, chunk) for candidate in candidates]

    def _similar_to_text(self, chunk: Chunk, text: str) -> list[Memory]:
        vector = self.embedder.embed_query(text[:2000])
        [hits] = self.store.search_vectors([vector], scope=chunk.scope, k=10)
        return [h.memory for h in hits if h.memory.kind != "episode"]

    # -- reconcile and write ------------------------------------------------------------------------

    def _reconcile(
        self, chunk: Chunk, candidates: list[CandidateMemory], ids: list[str], existing: set[str]
    ) -> Counter[str]:
        """Decide and apply each candidate whose memory id is not `existing` (already written)."""
        actions: Counter[str] = Counter()
        fresh = [self._dated(c) for c, i in zip(candidates, ids, strict=True) if i not in existing]
        actions["already-done"] += len(candidates) - len(fresh)
        if not fresh:
            return actions
        vectors = self.embedder.embed_documents([c.content for c in fresh])
        offered = len(fresh)
        fresh, vectors = self._worth_keeping(fresh, vectors)
        if len(fresh) < offered:
            actions["tentative-dropped"] += offered - len(fresh)
        if not fresh:
            return actions
        if self.extract_provider is None or self.config.reconcile == "rules":
            # one at a time: a statement sees what the chunk's earlier statements wrote ("I'm
            # Katherine" … "call me Kat" in one chunk), so updates inside a chunk supersede too;
            # a model's candidates the same way, through the same rules (tap.extract.model_candidates)
            for candidate, vector in zip(fresh, vectors, strict=True):
                near = self._nearest(chunk.scope, [vector])[0]
                known = self._evidence(chunk.scope, candidate, near, chunk.conversation)
                plan = decide(candidate, known, self.config)
                if self.extract_provider is not None:
                    plan = guarded(candidate, plan)
                actions[plan.action] += 1
                self._apply(chunk, candidate, vector, plan)
            return actions
        similar = self._nearest(chunk.scope, vectors)
        evidence = [
            self._evidence(chunk.scope, c, near, chunk.conversation) for c, near in zip(fresh, similar, strict=True)
        ]
        plans = self._plans(fresh, evidence)
        for candidate, vector, plan in zip(fresh, vectors, plans, strict=True):
            actions[plan.action] += 1
            self._apply(chunk, candidate, vector, plan)
        return actions

    def _worth_keeping(
        self, candidates: list[CandidateMemory], vectors: list[list[float]]
    ) -> tuple[list[CandidateMemory], list[list[float]]]:
        """The candidates to reconcile: every firm one, and the tentative ones (what the rules would
        leave out for their wording alone) that the keep probe, which reads their meaning, says are
        worth a memory; none without probes for this embedder."""

        def kept(candidate: CandidateMemory, vector: list[float]) -> bool:
            if not candidate.tentative or self.keep_all_tentative:
                return True
            return self.probes is not None and self.probes.keep.says_yes(vector)

        chosen = [(c, v) for c, v in zip(candidates, vectors, strict=True) if kept(c, v)]
        return [c for c, _ in chosen], [v for _, v in chosen]

    def single(self) -> Extraction:
        """A copy for writes outside the worker's batches (an agent's `remember`): the same store,
        embedder, providers, ledger and counters, scratch state of its own."""
        twin = copy.copy(self)
        twin._outdated, twin._prefetched, twin._forget_asks = [], {}, []
        return twin

    def apply_one(self, chunk: Chunk, candidate: CandidateMemory) -> tuple[Plan, str]:
        """Reconcile one candidate said in `chunk` against the scope and apply the decision, as
        `process` does for each extracted candidate (the rules, or a model's decision where
        `[extract] reconcile = "llm"` and a provider are configured, the rules again when that call
        fails or the budget is spent); returns the plan and the id the candidate's memory has
        (written, or not when the plan is a noop or a drop)."""
        candidate = self._dated(candidate)
        vector = self.embedder.embed_documents([candidate.content])[0]
        near = self._nearest(chunk.scope, [vector])[0]
        evidence = self._evidence(chunk.scope, candidate, near, chunk.conversation)
        plan = decide(candidate, evidence, self.config)
        if self.extract_provider is not None and self.config.reconcile != "rules":
            try:
                [plan] = self._plans([candidate], [evidence])
            except (ProviderCallError, BudgetExhausted) as exc:
                log.warning("reconcile by the rules: the model's reconcile failed (%s)", exc)
        self.counters[plan.action] += 1
        self._apply(chunk, candidate, vector, plan)
        self._mark_outdated()
        return plan, memory_id(chunk, candidate)

    def _dated(self, candidate: CandidateMemory) -> CandidateMemory:
        """An undated candidate (its turn came without a timestamp: a plain-text log, history a client
        sent before tap saw it) as of now, the stamp `_memory` writes it with: reconcile compares it
        with what the store holds by that stamp, not by 0. Taken as 0 it was older than everything
        stored, so an update was written as history of the value it updates, and a retraction or a
        change retired nothing."""
        return candidate if candidate.valid_from else msgspec.structs.replace(candidate, valid_from=self._now())

    def _nearest(self, scope: str, vectors: Sequence[Sequence[float]]) -> list[list[tuple[Memory, float]]]:
        """The SIMILAR_K most similar active non-episode memories of the scope, for each vector.

        Excerpts (kind episode) are most of a scope's memories, so the search fetches
        NEAREST_FETCH and keeps the statements among them.
        """
        found = self.store.search_vectors(vectors, scope=scope, k=NEAREST_FETCH)
        return [[(h.memory, h.score) for h in hits if h.memory.kind != "episode"][:SIMILAR_K] for hits in found]

    def _evidence(
        self, scope: str, candidate: CandidateMemory, near: list[tuple[Memory, float]], conversation: str
    ) -> Evidence:
        """What the store holds about one candidate: nearest, slot mates, retracted, corrected."""
        evidence = Evidence(similar=[Hit(memory=m, score=s) for m, s in near], conversation=conversation)
        if candidate.slot:
            family = [m for m in self.store.active_in_slot(scope=scope, slot=candidate.slot) if m.kind != "episode"]
            if not family:  # "my sister Ana lives in Madrid", then "Ana moved to Paris"
                family = aliased_mates(self.store, scope, candidate)
            evidence.mates = slot_mates(candidate, family) + linked_mates(self.store, scope, candidate)
        if candidate.retracts:
            retracts = " ".join(candidate.retracts)
            [hits] = self.store.search_text([retracts], scope=scope, k=RETRACT_LOOKUP_K, prefix=True)
            evidence.retracted = [
                h.memory
                for h in hits
                if h.memory.kind != "episode" and holds_words(h.memory.content, candidate.retracts)
            ]
        ended = [*words_for_deceased(candidate.deceased), *words_for_goal(candidate.fulfils)]
        ended += candidate.new_value.split()[-1:]  # its head noun; reconcile asks for the rest
        for word in ended:  # "Luna passed away", "we bought a house", "moved the wedding to May": what it
            # ends (tap.language.death, tap.language.goal, tap.language.new_value)
            known = {m.id for m in evidence.ended}
            [hits] = self.store.search_text([word], scope=scope, k=RETRACT_LOOKUP_K)
            evidence.ended += [
                h.memory
                for h in hits
                if h.memory.kind != "episode" and h.memory.id not in known and holds_words(h.memory.content, [word])
            ]
        if candidate.correction:
            wrong = candidate.correction[0]
            [hits] = self.store.search_text([wrong], scope=scope, k=RETRACT_LOOKUP_K)
            named = [
                h.memory
                for h in hits
                if h.memory.kind != "episode"
                and h.memory.valid_from <= candidate.valid_from
                and re.search(rf"\b{re.escape(wrong)}\b", h.memory.content)
            ]
            evidence.corrected = max(named, key=lambda m: (m.valid_from, m.created_at)) if named else None
        return evidence

    def _plans(self, candidates: list[CandidateMemory], evidence: list[Evidence]) -> list[Plan]:
        if self.extract_provider is None:
            return [decide(c, e, self.config) for c, e in zip(candidates, evidence, strict=True)]
        shown = [_shown(e) for e in evidence]
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
            plan = plan_from_decision(decision.action, decision.target, decision.content, near)
            plans.append(guarded(candidates[index], plan))
        return plans

    def _apply(self, chunk: Chunk, candidate: CandidateMemory, vector: Sequence[float], plan: Plan) -> None:
        if plan.action == "drop":
            return
        if plan.action == "noop":
            if plan.target is not None:
                self._bump(plan.target, candidate)
            return
        memory = self._memory(chunk, candidate, plan.content or candidate.content)
        replaces = plan.target is not None and plan.action in ("update", "supersede")
        if plan.target is not None and replaces:
            memory.supersedes = plan.target.id
            if plan.action == "update" or plan.content:  # a refined or rewritten version says the old too
                memory.sources = tuple(dict.fromkeys([*plan.target.sources, *memory.sources]))
            if plan.action == "update":
                memory.created_at = plan.target.created_at
            if plan.content and plan.content != candidate.content:
                vector = self.embedder.embed_documents([memory.content])[0]
        if plan.action == "history" and plan.target is not None:
            memory.superseded_by = plan.target.id  # an older statement of a slot a newer one fills
            self._outdated.append((memory, frozenset(plan.target.sources)))
        contradicted = link(memory, [plan.target, *plan.also]) if plan.action == "conflict" and plan.target else []
        self.store.add([memory], [vector])
        if contradicted:
            self.store.update_metadata(contradicted)
        if replaces:
            retired = [m for m in [plan.target, *plan.also] if m is not None]
            for old in retired:
                old.superseded_by = memory.id
                old.updated_at = self._now()
                self._outdated.append((old, frozenset(candidate.turn_ids)))
            self.store.update_metadata(retired)

    def _mark_outdated(self) -> None:
        """Tag the excerpts of the turns a superseded statement came from (OUTDATED_TAG): the verbatim
        line still says the old value. Only the passage that shares the most words with the
        statement is tagged, and a turn that also said the new value is left alone."""
        replaced, self._outdated = self._outdated, []
        tagged: list[Memory] = []
        for old, new_turns in replaced:
            turns = [t for t in old.sources if t not in new_turns]
            ids = [excerpt_id(old.scope, old.conversation, f"{t}\x1f{i}") for t in turns for i in range(MAX_PASSAGES)]
            if not ids:
                continue
            words = set(content_words(old.content))
            found = self.store.get(ids)
            for turn in turns:
                passages = [m for m in found if turn in m.sources]
                best = max(passages, key=lambda m: len(words & set(content_words(m.content))), default=None)
                if best is not None and OUTDATED_TAG not in best.tags and words & set(content_words(best.content)):
                    best.tags = (*best.tags, OUTDATED_TAG)
                    tagged.append(best)
        if tagged:
            self.store.update_metadata(list({m.id: m for m in tagged}.values()))

    def _bump(self, target: Memory, candidate: CandidateMemory) -> None:
        target.sources = tuple(dict.fromkeys([*target.sources, *candidate.turn_ids]))
        target.importance = max(target.importance, min(5, candidate.importance))
        target.updated_at = self._now()
        self.store.update_metadata([target])

    def _memory(self, chunk: Chunk, candidate: CandidateMemory, content: str) -> Memory:
        now = self._now()
        return Memory(
            id=memory_id(chunk, candidate),
            scope=chunk.scope,
            content=content,
            kind=candidate.kind,
            importance=max(1, min(5, candidate.importance)),
            tags=tuple(candidate.tags),
            source=chunk.source,
            conversation=chunk.conversation,
            sources=tuple(candidate.turn_ids),
            created_at=now,
            updated_at=now,
            valid_from=candidate.valid_from or now,
            embedder=self.embedder.model_id,
            slot=candidate.slot,
            slot_part=candidate.slot_part,
            slot_value=candidate.slot_value,
            context=candidate.context,
            holder=candidate.holder,
        )

    def _add_excerpts(self, chunk: Chunk, excerpts: list[Excerpt], ids: list[str], existing: set[str]) -> int:
        """Store the excerpts not stored yet (one write); returns how many. A text said again is
        stored once: an excerpt that repeats (tap.near_duplicate) one of the scope's nearest
        excerpts, or an earlier one of this chunk (a paste whose passages repeat), is not written,
        and the excerpt it repeats cites its turn too."""
        new = [(e, i) for e, i in zip(excerpts, ids, strict=True) if i not in existing]
        if not new:
            return 0
        vectors = self.embedder.embed_documents([e.vector_text for e, _ in new])
        found = self.store.search_vectors(vectors, scope=chunk.scope, k=SIMILAR_K)
        written: list[tuple[Memory, Sequence[float]]] = []
        cited_again: dict[str, Memory] = {}
        for (excerpt, memory_id_), vector, hits in zip(new, vectors, found, strict=True):
            content = excerpt.candidate.content
            stored = [h.memory for h in hits if h.memory.kind == "episode"]
            same = _repeated(content, [m for m, _ in written]) or _repeated(content, stored)
            if same is None:
                memory = self._memory(chunk, excerpt.candidate, content)
                memory.id = memory_id_
                written.append((memory, vector))
                continue
            turns = [t for t in excerpt.candidate.turn_ids if t not in same.sources]
            if turns:
                same.sources = (*same.sources, *turns)
                if same.id not in {m.id for m, _ in written}:
                    cited_again[same.id] = same
        if written:
            self.store.add([m for m, _ in written], [v for _, v in written])
        if cited_again:
            self.store.update_metadata(list(cited_again.values()))
        self.counters["excerpt-repeats"] += len(new) - len(written)
        return len(written)


def _repeated(content: str, memories: Sequence[Memory]) -> Memory | None:
    """The first of the memories that `content` repeats (tap.near_duplicate), if any."""
    return next((m for m in memories if repeats(content, m.content)), None)


def _shown(evidence: Evidence) -> list[Memory]:
    """The memories an LLM reconcile call is shown for one candidate: nearest first, then the slot
    mates and the retracted, ended or corrected memories it might not rank among them (each once)."""
    shown: dict[str, Memory] = {h.memory.id: h.memory for h in evidence.similar}
    corrected = [evidence.corrected] if evidence.corrected is not None else []
    for memory in [*evidence.mates, *evidence.retracted, *evidence.ended, *corrected]:
        shown.setdefault(memory.id, memory)
    return list(shown.values())
