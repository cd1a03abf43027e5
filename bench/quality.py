"""Memory quality on a hand-labelled chat set: precision, junk, recall, duplicates, supersession.

Run: ``./dev bench quality [--split dev|test|all] [--config FILE] [--out PATH] [--quick]
[--conversations q01,q07] [--oracle] [--label TEXT]``. Writes ``bench/results/quality.json`` and prints a table;
with ``--config`` naming an LLM extractor (``[extract] provider`` anthropic, ollama or openai), the
result is ``bench/results/quality-<provider>-<model>.json`` instead, with the calls, tokens and
estimated dollars the run spent (``llm``), so a model's run never overwrites the offline figures.
The data is ours (``bench/quality/conversations/*.json``; format in ``bench/quality/README.md``):
96 people ("conversations": 50 ``dev``, 46 frozen ``test``), each with sessions dated weeks or
months apart, and the memories a careful person would keep from them ("labels"), including which
older labels an update replaces.

Method:
- every conversation gets a fresh data dir and its own scope (``quality-<id>``); its sessions are
  fed in date order through tap's one ingestion entry point (``Runtime.ingestor.ingest``), one
  ``IngestEvent`` per session (conversation ``<id>/<session id>``, message ids = turn ids, ``name``
  where the data has one, timestamps = the session start plus two minutes per turn), and
  ``Runtime.worker.drain()`` runs after each session, as ``tap serve`` does between chats;
- then every memory of the scope is read, superseded versions included. ``episode`` memories (raw
  chunks) are a separate layer: counted, never scored as memories;
- a memory *matches* a label when it cites at least one of the label's turns and its text
  satisfies every ``must`` group (one alternative per group, case- and accent-insensitive, at the
  start of a word: ``live`` matches "lives"; ``=go`` only the whole word) and none of ``must_not``;
- each current update label's ``question`` goes to ``Runtime.recall.recall`` (default budget), as
  the proxy calls it; the block is checked for the current value and for superseded memories.

Metrics (non-episode memories, active and superseded, unless said otherwise):
- precision = memories matching some label (optional ones included) / memories written;
- junk rate = memories citing only turns that carry no label at all (or citing nothing) / memories;
- recall = non-optional labels matched by at least one memory / non-optional labels;
- duplicates = sum over labels of (active memories matching it - 1) / active memories;
- memories per 100 turns (written, and active);
- supersession accuracy, per label with ``supersedes``: ``ok`` when some memory matches it (an
  active one, unless a later label replaces it too) and no active memory matches only an older
  label; else ``new-missing``, ``new-superseded`` or ``old-still-active``;
- wrong supersessions = memories matching a label that no label replaces, superseded by a memory
  that matches neither that label nor one replacing it;
- current first, per current update label: the first block memory that matches the label or one
  it replaces (episodes included) matches the label; ``current top-1``: the block's first memory
  does; superseded in blocks = block memories the store marks superseded (must be 0);
- informational: kind agreement with the matched label, and form issues (a role prefix such as
  "User:", first-person words, a question mark at the end).
``--oracle`` scores the labels' own statements as the store (a check of the labels and the metric
code: every value must be perfect). Targets (issue #44, for the test split) are printed next to the values.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import benchutil
import msgspec

from tap.config import Config, LoadedConfig, parse_config
from tap.records import IngestEvent, Memory, Message
from tap.wiring.runtime import Runtime, open_runtime

DATA_DIR = Path(__file__).resolve().parent / "quality" / "conversations"
QUICK = ("q01", "q21", "q43")  # one personal, one work, one group chat
TURN_SPACING_S = 120.0
RETRY_WAIT_S = 120.0
TARGETS: dict[str, tuple[str, float]] = {  # issue #44, for the held-out test split
    "precision": (">=", 0.85),
    "junk_rate": ("<=", 0.05),
    "supersession_accuracy": (">=", 0.70),
    "superseded_in_blocks": ("<=", 0),
    "current_first": (">=", 0.90),
    "current_top1": (">=", 0.70),
    "memories_per_100_turns": ("<=", 40.0),
}
_ID = re.compile(r"q\d{2,3}")
_TURN_ID = re.compile(r"(q\d{2,3})s(\d+)t(\d+)")


# --- data ------------------------------------------------------------------------------------


class Turn(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """One message; `name` for chats with named speakers."""

    id: str
    role: Literal["user", "assistant"]
    text: str
    name: str = ""


class Session(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """One chat session; `date` is ISO 8601 (UTC when it carries no offset)."""

    id: str
    date: str
    turns: list[Turn]

    @property
    def start(self) -> float:
        stamp = datetime.fromisoformat(self.date)
        return (stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)).timestamp()


class Label(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """A memory a careful person would keep (see bench/quality/README.md)."""

    id: str
    kind: Literal["fact", "preference", "decision", "event", "instruction", "plan"]
    statement: str
    turns: list[str]
    must: list[list[str]]
    must_not: list[str] = msgspec.field(default_factory=list)
    supersedes: list[str] = msgspec.field(default_factory=list)
    optional: bool = False
    question: str = ""


class Conversation(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """One person (one scope): sessions in date order and their labels."""

    id: str
    title: str
    theme: Literal["personal", "work", "mixed", "group"]
    source: Literal["proxy", "telegram", "logtail"]
    split: Literal["dev", "test"]
    notes: str
    sessions: list[Session]
    labels: list[Label]

    @property
    def turns(self) -> list[Turn]:
        return [turn for session in self.sessions for turn in session.turns]

    @property
    def scope(self) -> str:
        return f"quality-{self.id}"


def load(data_dir: Path = DATA_DIR) -> list[Conversation]:
    """Every conversation file, in id order."""
    decoder = msgspec.json.Decoder(Conversation)
    return [decoder.decode(path.read_bytes()) for path in sorted(data_dir.glob("q*.json"))]


def validate(conversations: Sequence[Conversation]) -> list[str]:
    """Everything wrong with the data set (empty when it is valid)."""
    problems: list[str] = []
    seen: set[str] = set()
    for conv in conversations:
        where = conv.id
        if not _ID.fullmatch(conv.id) or conv.id in seen:
            problems.append(f"{where}: bad or repeated conversation id")
        seen.add(conv.id)
        starts = [s.start for s in conv.sessions]
        if starts != sorted(starts) or len(set(starts)) != len(starts):
            problems.append(f"{where}: sessions are not in strictly increasing date order")
        for s_index, session in enumerate(conv.sessions, 1):
            if session.id != f"{conv.id}s{s_index}":
                problems.append(f"{where}: session {session.id} should be {conv.id}s{s_index}")
            for t_index, turn in enumerate(session.turns, 1):
                if turn.id != f"{conv.id}s{s_index}t{t_index}":
                    problems.append(f"{where}: turn {turn.id} should be {conv.id}s{s_index}t{t_index}")
                if not turn.text.strip():
                    problems.append(f"{where}: turn {turn.id} is empty")
        turn_ids = {t.id for t in conv.turns}
        labels = {label.id: label for label in conv.labels}
        if len(labels) != len(conv.labels):
            problems.append(f"{where}: repeated label ids")
        for number, label in enumerate(conv.labels, 1):
            if label.id != f"{conv.id}.L{number}":
                problems.append(f"{where}: label {label.id} should be {conv.id}.L{number}")
            if not label.turns or not set(label.turns) <= turn_ids:
                problems.append(f"{label.id}: cites turns that do not exist: {sorted(set(label.turns) - turn_ids)}")
            if not label.must or any(not group or any(not alt.strip("= ") for alt in group) for group in label.must):
                problems.append(f"{label.id}: empty must group or alternative")
            for old in label.supersedes:
                if old not in labels or old == label.id:
                    problems.append(f"{label.id}: supersedes unknown label {old}")
                elif _position(labels[old], turn_ids) > _position(label, turn_ids):
                    problems.append(f"{label.id}: supersedes {old}, which comes later")
            if label.supersedes and not label.question.strip():
                problems.append(f"{label.id}: an update without a question")
            if not Matcher(label).matches_text(label.statement):
                problems.append(f"{label.id}: its own statement does not satisfy its must groups")
        for label in conv.labels:  # sharp labels: a statement, cited as its label is, states nothing else
            own = Memory(id=label.id, scope=conv.scope, content=label.statement, sources=list(label.turns))
            others = [other.id for other in conv.labels if other.id != label.id and Matcher(other).matches(own)]
            if others:
                problems.append(f"{label.id}: its statement also matches {others}")
    return problems


def _position(label: Label, turn_ids: set[str]) -> tuple[int, int]:
    """(session, turn) of the label's last cited turn, for ordering updates."""
    spots = [(int(m.group(2)), int(m.group(3))) for t in label.turns if t in turn_ids and (m := _TURN_ID.fullmatch(t))]
    return max(spots) if spots else (0, 0)


# --- matching --------------------------------------------------------------------------------


def normalise(text: str) -> str:
    """Lower case, accents and typographic quotes folded: 'Chloé’s' -> "chloe's"."""
    folded = unicodedata.normalize("NFKD", text)
    folded = "".join(c for c in folded if not unicodedata.combining(c))
    return folded.casefold().replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')


def _pattern(alternative: str) -> re.Pattern[str]:
    """An alternative at the start of a word ('live' ~ 'lives'); '=go' is the whole word only."""
    exact = alternative.startswith("=")
    text = normalise(alternative.lstrip("=").strip())
    return re.compile(r"(?<![0-9a-z])" + re.escape(text) + (r"(?![0-9a-z])" if exact else ""))


class Matcher:
    """Whether a memory states a label: cites one of its turns and satisfies its word groups."""

    def __init__(self, label: Label) -> None:
        self.label = label
        self.turns = frozenset(label.turns)
        self.groups = [[_pattern(alt) for alt in group] for group in label.must]
        self.forbidden = [_pattern(alt) for alt in label.must_not]

    def matches_text(self, content: str) -> bool:
        text = normalise(content)
        if any(p.search(text) for p in self.forbidden):
            return False
        return all(any(p.search(text) for p in group) for group in self.groups)

    def matches(self, memory: Memory) -> bool:
        return not self.turns.isdisjoint(memory.sources) and self.matches_text(memory.content)


# --- scoring ---------------------------------------------------------------------------------

_FIRST_PERSON = re.compile(r"(?<![0-9a-z'])(i|i'm|i've|i'd|i'll|me|my|mine|we|we're|we've|our|ours)(?![0-9a-z'])")
_QUOTED = re.compile(r'"[^"]*"')


@dataclass
class Probe:
    """One current-value question and the block recall answered it with (rank order)."""

    label: str
    question: str
    block: list[Memory]


@dataclass
class Scored:
    """Counts and failures of one conversation (rates are computed over sums of counts)."""

    conversation: Conversation
    counts: Counter[str] = field(default_factory=Counter)
    failures: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    seconds: float = 0.0
    llm_calls: list[dict[str, Any]] = field(default_factory=list)
    """The cost ledger's rows of this conversation's run (provider, model, purpose, calls, tokens, USD)."""

    def fail(self, bucket: str, /, **item: Any) -> None:
        self.failures.setdefault(bucket, []).append(
            {"conversation": self.conversation.id, "split": self.conversation.split, **item}
        )


def replaced_by(conv: Conversation) -> dict[str, list[str]]:
    """label id -> ids of the labels that supersede it."""
    out: dict[str, list[str]] = {}
    for label in conv.labels:
        for old in label.supersedes:
            out.setdefault(old, []).append(label.id)
    return out


def older(conv: Conversation, label_id: str) -> set[str]:
    """Every label the given one replaces, directly or through a chain."""
    by_id = {label.id: label for label in conv.labels}
    out: set[str] = set()
    todo = list(by_id[label_id].supersedes)
    while todo:
        current = todo.pop()
        if current not in out:
            out.add(current)
            todo.extend(by_id[current].supersedes)
    return out


def score(conv: Conversation, memories: Sequence[Memory], probes: Sequence[Probe]) -> Scored:
    """Score one conversation's memories (all of its scope, superseded included) and probes."""
    result = Scored(conv)
    c = result.counts
    texts = {t.id: t.text for t in conv.turns}
    names = {normalise(t.name) for t in conv.turns if t.name} | {"user", "assistant", "system"}
    matchers = {label.id: Matcher(label) for label in conv.labels}
    labels = {label.id: label for label in conv.labels}
    successors = replaced_by(conv)
    labelled_turns = {t for label in conv.labels for t in label.turns}
    by_id = {m.id: m for m in memories}
    notes = [m for m in memories if m.kind != "episode"]
    active = [m for m in notes if m.active]
    matched: dict[str, list[str]] = {m.id: [lid for lid, mt in matchers.items() if mt.matches(m)] for m in memories}

    c["conversations"] = 1
    c["turns"] = len(texts)
    c["labels"] = len(conv.labels)
    c["labels_required"] = sum(1 for label in conv.labels if not label.optional)
    c["updates"] = sum(1 for label in conv.labels if label.supersedes)
    c["memories"] = len(notes)
    c["memories_active"] = len(active)
    c["episodes"] = len(memories) - len(notes)
    c["episodes_active"] = sum(1 for m in memories if m.kind == "episode" and m.active)

    def brief(memory: Memory) -> dict[str, Any]:
        return {
            "id": memory.id,
            "kind": memory.kind,
            "content": memory.content,
            "sources": list(memory.sources),
            "active": memory.active,
            "labels": matched.get(memory.id, []),
        }

    # precision, junk, kinds, form
    for memory in notes:
        if matched[memory.id]:
            c["matched"] += 1
            c["kind_checked"] += 1
            c["kind_agree"] += memory.kind in {labels[h].kind for h in matched[memory.id]}
        else:
            junk = not memory.sources or set(memory.sources).isdisjoint(labelled_turns)
            c["junk"] += junk
            c["uncited"] += not memory.sources
            result.fail(
                "unmatched_memories",
                **brief(memory),
                junk=junk,
                cited=[
                    {"turn": s, "text": texts.get(s, "(not a turn of this conversation)")[:160]} for s in memory.sources
                ],
            )
        text = normalise(memory.content)
        prefix = re.match(r"\s*([^:\n]{1,30}):", text)
        c["form_role_prefix"] += bool(prefix and prefix.group(1).strip() in names)
        c["form_first_person"] += bool(_FIRST_PERSON.search(_QUOTED.sub("", text)))
        c["form_question"] += text.rstrip().endswith("?")

    # recall and duplicates
    for label in conv.labels:
        stating = [m for m in notes if label.id in matched[m.id]]
        if not label.optional:
            if stating:
                c["required_hit"] += 1
            else:
                result.fail(
                    "missed_labels", label=label.id, statement=label.statement, kind=label.kind, turns=label.turns
                )
        live = [m for m in stating if m.active]
        if len(live) > 1:
            c["duplicates"] += len(live) - 1
            result.fail("duplicates", label=label.id, statement=label.statement, memories=[brief(m) for m in live])

    # supersession per update label
    for label in conv.labels:
        if not label.supersedes:
            continue
        current = label.id not in successors
        news = [m for m in notes if label.id in matched[m.id]]
        olds = [
            m for m in active if label.id not in matched[m.id] and any(o in matched[m.id] for o in label.supersedes)
        ]
        if not news:
            outcome = "new-missing"
        elif current and not any(m.active for m in news):
            outcome = "new-superseded"
        elif olds:
            outcome = "old-still-active"
        else:
            outcome = "ok"
        c[f"update_{outcome}"] += 1
        old_seen = any(any(o in matched[m.id] for o in label.supersedes) for m in notes)
        result.fail(
            "updates",
            label=label.id,
            statement=label.statement,
            supersedes=label.supersedes,
            outcome=outcome,
            old_seen=old_seen,
            new_memories=[brief(m) for m in news],
            old_active=[brief(m) for m in olds],
        )

    # wrong supersessions
    for memory in notes:
        if memory.current:  # archived memories (tap.extract.consolidation) are not superseded
            continue
        c["superseded"] += 1
        states = set(matched[memory.id])
        if not any(h not in successors for h in states):
            continue
        allowed = states | {s for h in states for s in successors.get(h, [])}
        newer = by_id.get(memory.superseded_by)
        if newer is None or allowed.isdisjoint(matched.get(newer.id, [])):
            c["wrong_supersessions"] += 1
            result.fail(
                "wrong_supersessions",
                memory=brief(memory),
                superseded_by=brief(newer) if newer is not None else memory.superseded_by,
            )

    # current value first
    for probe in probes:
        c["probes"] += 1
        olds_ids = older(conv, probe.label)
        new_m = matchers[probe.label]
        kinds: list[str] = []
        for memory in probe.block:
            c["block_memories"] += 1
            c["episodes_in_blocks"] += memory.kind == "episode"
            stored = by_id.get(memory.id, memory)
            if memory.superseded_by or stored.superseded_by:
                c["superseded_in_blocks"] += 1
                result.fail("superseded_in_block", label=probe.label, question=probe.question, memory=brief(stored))
            if new_m.matches(memory):
                kinds.append("new")
            elif any(matchers[o].matches(memory) for o in olds_ids):
                kinds.append("old")
            else:
                kinds.append("-")
        relevant = [k for k in kinds if k != "-"]
        top1 = bool(kinds) and kinds[0] == "new"
        first = bool(relevant) and relevant[0] == "new"
        c["probe_top1_ok"] += top1
        c["probe_first_ok"] += first
        c["probe_no_relevant"] += not relevant
        outcome = "ok" if first else "old-first" if relevant else "no-relevant"
        result.fail(
            "ranking",
            label=probe.label,
            question=probe.question,
            statement=labels[probe.label].statement,
            outcome=outcome,
            top1=top1,
            block=[
                {"kind": m.kind, "content": m.content[:200], "match": k}
                for m, k in zip(probe.block, kinds, strict=True)
            ],
        )
    return result


def rates(c: Counter[str]) -> dict[str, Any]:
    """The headline numbers from summed counts."""

    def ratio(num: float, den: float) -> float | None:
        return round(num / den, 3) if den else None

    return {
        "precision": ratio(c["matched"], c["memories"]),
        "junk_rate": ratio(c["junk"], c["memories"]),
        "recall": ratio(c["required_hit"], c["labels_required"]),
        "duplicate_rate": ratio(c["duplicates"], c["memories_active"]),
        "memories_per_100_turns": ratio(100 * c["memories"], c["turns"]),
        "active_per_100_turns": ratio(100 * c["memories_active"], c["turns"]),
        "supersession_accuracy": ratio(c["update_ok"], c["updates"]),
        "wrong_supersessions": c["wrong_supersessions"],
        "current_first": ratio(c["probe_first_ok"], c["probes"]),
        "current_top1": ratio(c["probe_top1_ok"], c["probes"]),
        "superseded_in_blocks": c["superseded_in_blocks"],
        "kind_agreement": ratio(c["kind_agree"], c["kind_checked"]),
        "form_issue_rate": {
            "role_prefix": ratio(c["form_role_prefix"], c["memories"]),
            "first_person": ratio(c["form_first_person"], c["memories"]),
            "question": ratio(c["form_question"], c["memories"]),
        },
        "update_outcomes": {k: c[f"update_{k}"] for k in ("ok", "old-still-active", "new-missing", "new-superseded")},
    }


# --- running tap -----------------------------------------------------------------------------


def current_updates(conv: Conversation) -> list[Label]:
    """Update labels that no later label replaces: their questions are the probes."""
    successors = replaced_by(conv)
    return [label for label in conv.labels if label.supersedes and label.id not in successors]


def drain(rt: Runtime, max_wait_s: float = RETRY_WAIT_S) -> None:
    """Extract every queued chunk; wait for retries due soon (LLM extractors back off briefly)."""
    waited = 0.0
    rt.worker.drain()
    while (wakeup := rt.queue.next_wakeup()) is not None and waited < max_wait_s:
        delay = max(0.0, wakeup - time.time())
        if delay > max_wait_s - waited:
            return
        time.sleep(delay + 0.05)
        waited += delay
        rt.worker.drain(flush=False)


def feed(rt: Runtime, conv: Conversation, retry_wait_s: float) -> None:
    """Every session in date order through the ingestion entry point, extracted after each."""
    for session in sorted(conv.sessions, key=lambda s: s.start):
        messages = [
            Message(
                role=turn.role,
                content=turn.text,
                name=turn.name,
                id=turn.id,
                timestamp=session.start + index * TURN_SPACING_S,
            )
            for index, turn in enumerate(session.turns)
        ]
        rt.ingestor.ingest(
            IngestEvent(scope=conv.scope, conversation=f"{conv.id}/{session.id}", source=conv.source, messages=messages)
        )
        drain(rt, retry_wait_s)


def run_tap(conv: Conversation, toml: str) -> Scored:
    """A fresh store for one person: feed, read every memory, ask the update questions."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tap-quality-") as home:
        config = parse_config(toml)
        rt = open_runtime(LoadedConfig(config=config, path=None, data_dir=Path(home)))
        try:
            # a deterministic extractor that raised will raise again: no point waiting for its retries
            feed(rt, conv, 0.0 if config.extract.provider == "rules" else RETRY_WAIT_S)
            left = {k: v for k, v in rt.queue.counts().items() if k != "done" and v}
            memories = list(rt.store.iter_memories(scope=conv.scope))
            probes = []
            for label in current_updates(conv):
                answer = rt.recall.recall(label.question, scope=conv.scope)
                probes.append(Probe(label.id, label.question, [r.memory for r in answer.memories]))
            rt.recall.flush_access()
            calls = rt.worker.status()["cost_today"]["calls"]
        finally:
            rt.close()
    result = score(conv, memories, probes)
    result.seconds = time.perf_counter() - started
    result.llm_calls = calls
    if left:
        result.fail("queue_left", counts=left)
    return result


def oracle_memories(conv: Conversation) -> list[Memory]:
    """The labels as a perfect store would hold them: statements citing their turns, updates applied."""
    ids = {label.id: f"oracle-{label.id}" for label in conv.labels}
    successors = replaced_by(conv)
    return [
        Memory(
            id=ids[label.id],
            scope=conv.scope,
            content=label.statement,
            kind=label.kind,
            sources=list(label.turns),
            superseded_by=ids[successors[label.id][0]] if label.id in successors else "",
            supersedes=ids[label.supersedes[0]] if label.supersedes else "",
        )
        for label in conv.labels
    ]


def run_oracle(conv: Conversation) -> Scored:
    """Score the labels themselves; the block of each probe holds its label and the older ones."""
    memories = oracle_memories(conv)
    by_label = {m.id.removeprefix("oracle-"): m for m in memories}
    probes = [Probe(label.id, label.question, [by_label[label.id]]) for label in current_updates(conv)]
    return score(conv, memories, probes)


# --- report ----------------------------------------------------------------------------------


def aggregate(results: Sequence[Scored]) -> dict[str, Any]:
    """Rates and counts for all, dev and test."""
    out: dict[str, Any] = {}
    for split in ("all", "dev", "test"):
        chosen = [r for r in results if split == "all" or r.conversation.split == split]
        total: Counter[str] = Counter()
        for r in chosen:
            total.update(r.counts)
        out[split] = {"rates": rates(total), "counts": dict(sorted(total.items()))}
    return out


def extractor(config: Config) -> dict[str, str]:
    """Which extractor a config runs: provider, model, reconcile."""
    cfg = config.extract
    model = {"anthropic": cfg.model, "ollama": cfg.ollama_model, "openai": cfg.openai_model}.get(cfg.provider, "")
    return {"provider": cfg.provider, "model": model, "gate": cfg.gate, "reconcile": cfg.reconcile}


def result_name(config: Config, mode: str) -> str:
    """The result's file name (without .json): `quality` for the offline extractor, else
    `quality-<provider>-<model>`; `-<mode>` for a quick or oracle run."""
    used = extractor(config)
    base = "quality"
    if mode != "oracle" and used["provider"] != "rules":
        slug = re.sub(r"[^A-Za-z0-9._-]+", "-", used["model"]).strip("-.") or "model"
        base = f"quality-{used['provider']}-{slug}"
    return base if mode == "full" else f"{base}-{mode}"


def llm_totals(results: Sequence[Scored]) -> list[dict[str, Any]]:
    """The run's LLM calls, tokens and estimated dollars per provider, model and purpose."""
    totals: dict[tuple[str, str, str], Counter[str]] = {}
    for r in results:
        for row in r.llm_calls:
            key = (row["provider"], row["model"], row["purpose"])
            totals.setdefault(key, Counter()).update(
                {k: row[k] for k in ("calls", "input_tokens", "output_tokens", "cost_usd")}
            )
    return [
        {"provider": p, "model": m, "purpose": u, **{k: round(v, 6) for k, v in c.items()}}
        for (p, m, u), c in sorted(totals.items())
    ]


def build_result(results: Sequence[Scored], mode: str, config: str) -> dict[str, Any]:
    """The JSON document: machine, data, targets, per split, per conversation, failures. Failures
    are listed with their text for the dev split only; the test split's are counted by kind, so
    the result file never quotes a held-out conversation."""
    failures: dict[str, list[dict[str, Any]]] = {}
    held_out: Counter[str] = Counter()  # the test split's failures by kind: never their text
    for r in results:
        for kind, items in r.failures.items():
            if r.conversation.split == "test":
                held_out.update(_failure_kind(kind, item) for item in items)
            else:
                failures.setdefault(kind, []).extend(items)
    updates = failures.pop("updates", [])
    ranking = failures.pop("ranking", [])
    return {
        "benchmark": "quality",
        "machine": benchutil.machine(),
        "code": code_version(),
        "mode": mode,
        "config": config or "(defaults: [extract] provider = rules, store_episodes = true)",
        "extractor": extractor(parse_config(config)),
        "llm": llm_totals(results),
        "targets": {k: f"{op} {v}" for k, (op, v) in TARGETS.items()},
        "splits": aggregate(results),
        "conversations": [
            {
                "id": r.conversation.id,
                "split": r.conversation.split,
                "theme": r.conversation.theme,
                "seconds": round(r.seconds, 1),
                "rates": {k: v for k, v in rates(r.counts).items() if not isinstance(v, dict)},
                "counts": dict(sorted(r.counts.items())),
            }
            for r in results
        ],
        "update_outcomes": updates,
        "ranking": ranking,
        "failures": failures,
        "test_failure_kinds": dict(sorted(held_out.items())),
    }


def _failure_kind(kind: str, item: dict[str, Any]) -> str:
    """A held-out failure as its kind alone ("updates:old-still-active", "ranking:old-first")."""
    outcome = item.get("outcome")
    return f"{kind}:{outcome}" if isinstance(outcome, str) else kind


def code_version() -> dict[str, Any]:
    """The git commit the run measured and whether tracked files differed from it (read-only git)."""

    def git(*args: str) -> str:
        try:
            done = subprocess.run(
                ["git", *args], cwd=benchutil.ROOT, capture_output=True, text=True, timeout=10, check=True
            )
        except (OSError, subprocess.SubprocessError):
            return ""
        return done.stdout.strip()

    commit = git("rev-parse", "HEAD")
    changed = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit or "unknown", "tracked_files_changed": len(changed.splitlines()) if commit else None}


def _meets(key: str, value: Any) -> str:
    if key not in TARGETS or value is None:
        return ""
    op, target = TARGETS[key]
    good = value >= target if op == ">=" else value <= target
    return "yes" if good else "NO"


def print_report(result: dict[str, Any]) -> None:
    """A table of the headline numbers per split, with the targets."""
    splits = result["splits"]
    keys = [
        "precision",
        "junk_rate",
        "recall",
        "duplicate_rate",
        "memories_per_100_turns",
        "active_per_100_turns",
        "supersession_accuracy",
        "wrong_supersessions",
        "current_first",
        "current_top1",
        "superseded_in_blocks",
        "kind_agreement",
    ]
    rows: list[list[object]] = []
    for key in keys:
        row: list[object] = [key]
        for split in ("all", "dev", "test"):
            value = splits[split]["rates"][key]
            row.append("-" if value is None else value)
        op_target = TARGETS.get(key)
        row.append(f"{op_target[0]} {op_target[1]}" if op_target else "")
        judged = "test" if splits["test"]["rates"][key] is not None else "all"  # the targets are the test split's
        row.append(_meets(key, splits[judged]["rates"][key]))
        rows.append(row)
    counts = {s: splits[s]["counts"] for s in splits}
    print(
        "memory quality ("
        + ", ".join(
            f"{s}: {counts[s].get('conversations', 0)} conv / {counts[s].get('turns', 0)} turns / "
            f"{counts[s].get('memories', 0)} memories / {counts[s].get('episodes', 0)} episodes"
            for s in ("all", "dev", "test")
        )
        + ")"
    )
    print(benchutil.table(["metric", "all", "dev", "test", "target", "met"], rows))
    for split in ("all", "dev", "test"):
        form = splits[split]["rates"]["form_issue_rate"]
        outcomes = splits[split]["rates"]["update_outcomes"]
        print(f"{split}: update outcomes {outcomes}; form issues {form}")
    for row in result["llm"]:
        print(
            f"llm {row['provider']} {row['model']} {row['purpose']}: {row['calls']} calls, "
            f"{row['input_tokens']} in / {row['output_tokens']} out tokens, ${row['cost_usd']:.4f}"
        )
    queue_left = result["failures"].get("queue_left")
    if queue_left:
        print(f"WARNING: chunks not extracted in {len(queue_left)} conversations (extractor failing?)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--split", choices=("all", "dev", "test"), default="all", help="which conversations to run")
    parser.add_argument("--config", type=Path, default=None, help="a tap config file (default: the offline defaults)")
    parser.add_argument("--out", type=Path, default=None, help="where to write the JSON result")
    parser.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)} (smoke run)")
    parser.add_argument("--conversations", default="", help="comma-separated conversation ids to run")
    parser.add_argument("--oracle", action="store_true", help="score the labels themselves (checks the labels)")
    parser.add_argument("--data", type=Path, default=DATA_DIR, help="folder of conversation files")
    parser.add_argument("--label", default="", help="a note on what was measured, kept in the result")
    args = parser.parse_args(argv)

    conversations = load(args.data)
    problems = validate(conversations)
    if problems:
        print("invalid data set:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 2
    if args.quick:
        conversations = [c for c in conversations if c.id in QUICK]
    elif args.conversations:
        wanted = {x.strip() for x in args.conversations.split(",") if x.strip()}
        conversations = [c for c in conversations if c.id in wanted]
    if args.split != "all":
        conversations = [c for c in conversations if c.split == args.split]
    if not conversations:
        print("no conversation selected", file=sys.stderr)
        return 2
    toml = args.config.read_text() if args.config else ""
    config = parse_config(toml)  # fail before the run on a bad config

    runner: Callable[[Conversation], Scored] = run_oracle if args.oracle else (lambda c: run_tap(c, toml))
    results: list[Scored] = []
    with benchutil.Bar("conversations", total=len(conversations)) as bar:
        for conv in conversations:
            results.append(runner(conv))
            bar.advance()
    mode = "oracle" if args.oracle else "quick" if args.quick else "full"
    result = build_result(results, mode, toml)
    result["label"] = args.label
    result["selection"] = {"split": args.split, "conversations": [c.id for c in conversations]}
    result["data"] = {
        s: summarise(c for c in conversations if s == "all" or c.split == s) for s in ("all", "dev", "test")
    }
    path = benchutil.write_result(result_name(config, mode), result, args.out)
    print_report(result)
    print(f"\nwritten to {path}")
    return 0


def summarise(conversations: Iterable[Conversation]) -> dict[str, int]:
    """Size of a data set: conversations, sessions, turns, labels, required labels, updates."""
    convs = list(conversations)
    return {
        "conversations": len(convs),
        "sessions": sum(len(c.sessions) for c in convs),
        "turns": sum(len(c.turns) for c in convs),
        "labels": sum(len(c.labels) for c in convs),
        "required": sum(1 for c in convs for label in c.labels if not label.optional),
        "updates": sum(1 for c in convs for label in c.labels if label.supersedes),
    }


if __name__ == "__main__":
    sys.exit(main())
