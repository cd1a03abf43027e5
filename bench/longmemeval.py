"""Recall quality on LongMemEval_S through tap's public API, per question type, against BM25 over raw turns.

Run: ``./dev bench longmemeval [--data PATH] [--limit N] [--types t1,t2] [--budget 500] [--config FILE]
[--out PATH] [--quick] [--workers N] [--window N] [--home DIR]``. Writes ``bench/results/longmemeval.json``
and prints per-type tables. The data (MIT, Wu et al. 2025) is read from ``../shared/data/longmemeval/lme_s_dev.json.gz``
or ``--data``; nothing of it is copied into the repo (the results quote short excerpts of missed turns).

Method (../shared/data/longmemeval/README.md):
- one real ``tap serve`` subprocess (temp ``TAP_HOME``, free loopback port, the offline default config
  or ``--config``), every question in its own scope ``lme-<question_id>``. Each session is one
  ``POST /tap/ingest`` (conversation ``<question_id>/S<i>``, source ``import``, turn ids ``S<i>T<j>``,
  timestamps from ``haystack_dates`` plus 10 s per turn), sessions in date order. The questions are
  never visible to ingestion;
- ``[extract] flush_after_s = 0`` is the one change to the config: a session arrives whole in one
  request, so its last partial window can be chunked at once instead of after 60 idle seconds. The
  chunks are the same either way; only the wait differs;
- pipelining: questions go in groups of ``--window`` (default 4: a few users at once). Within a
  group, round r posts the r-th session of each question (``--workers`` requests at a time), then
  waits until ``GET /tap/status`` shows no turn waiting in an open window (the worker has closed the
  windows into queued chunks), so each scope's chunks are queued, and extracted (oldest first), in
  session order. The next group is posted while the worker still extracts the earlier ones. After
  the last group it waits until the queue is empty (``extraction.queue``: queued = running =
  turns_waiting = 0). Throughput = turns posted / seconds from the first post to the empty queue,
  extraction included. Small groups keep the queue short (each round waits for the worker's next
  flush), as a few users at a time would. Posting all 120 questions at once builds a backlog of
  ~44k chunks in ~200 s, and claiming the oldest chunk then sorts the whole backlog each time
  (measured: extraction fell from ~45 to ~16 chunks/s), which measures that backlog, not tap;
- then one ``POST /tap/recall`` per question (the question as ``text``, its scope, ``--budget``),
  sequentially on an idle server: the first recall of each scope ("cold": the store may have to
  load the scope's vectors, as for a user who was away), then the question's words in reverse order
  ("warm": another query, so the recall cache misses, on a loaded scope), then the first request
  again at once ("cached": served from the recall cache). Latency: the server's ``elapsed_ms`` and
  the client's wall time. ER uses the cold blocks;
- ``--home DIR`` keeps the data dir; a later run with the same questions and config reuses its
  ingestion (recall and scoring only: for working on recall without 20 minutes of ingestion);
- ER_frac = share of a question's evidence turns (``has_answer``) cited by a memory of the block
  (``sources``), averaged per type and over every question with evidence (README: 115 of 120; the
  abstention questions ``_abs`` have none, except one multi-session question that is scored);
  ER_all = share of questions with all their evidence cited;
- baseline in the same run: BM25 over the raw turns of the question's haystack
  (``[<session date>] <role>: <text>``, bench/bm25_turns.py), packed greedily into the same budget
  with tap's token counter and no header; a reference line repeats it on the bare turn text with
  the README's estimate (1.3 tokens per word + 4 per turn), which the README's figures used;
- controls: "answer in block" for questions with a short answer (at most 5 words; not abstention,
  not preference): the normalised answer occurs as whole words in the block text (tap's block, the
  BM25 block); "shuffled citations": tap's block with every cited turn id replaced by a random turn
  id of the same session (must collapse, otherwise citations are too wide to mean anything);
- diagnostics, public API only: for every evidence turn the block misses, ``GET /tap/memories``
  (all versions) says which memories cite it and ``GET /tap/memories/search`` (the same ranking the
  packer walks, without the budget) where they rank. Reasons, first that applies: ``not-extracted``
  (no memory cites the turn), ``superseded`` (only superseded versions cite it),
  ``only-in-episode`` (only active episodes cite it), ``ranked-out`` (an active non-episode citing
  memory is in the ranking, below the cut), ``not-retrieved`` (active non-episode citing memories,
  none of them in the ranking).
  Counterfactual: the ranking packed again with tap.recall.engine.pack_block (``tap_repacked``, which must
  reproduce the block: ``repack_matches_block`` counts the questions where it does) and packed
  without episodes (``tap_without_episodes``): what the block would cite if episodes never entered it.
"""

from __future__ import annotations

import argparse
import calendar
import gzip
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import benchutil
import msgspec
from bm25_turns import BM25
from tapserve import Api, Server

from tap.recall.engine import pack_block
from tap.records import Memory
from tap.tokens import count_tokens

DEFAULT_DATA = benchutil.ROOT.parent / "shared" / "data" / "longmemeval" / "lme_s_dev.json.gz"
TYPES = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "knowledge-update",
    "temporal-reasoning",
)
QUICK_TYPES = ("single-session-user", "single-session-assistant")
README_BM25 = {  # BM25 ER_frac@500 the data's README quotes for this sample (its own token estimate)
    "knowledge-update": 79.6,
    "multi-session": 67.4,
    "single-session-assistant": 60.0,
    "single-session-preference": 49.2,
    "single-session-user": 94.1,
    "temporal-reasoning": 55.0,
    "all": 66.7,
}
TURN_STEP_S = 10.0
MARKER = "lme-ingested.json"  # written to a kept --home once its ingestion has finished
WINDOW = 4  # questions ingested side by side: a few users at once, not 120 (see the module docstring)
BIG_RANKING = 500
SEED = 7
SHORT_ANSWER_WORDS = 5
EXCERPT_CHARS = 300
REASONS = ("not-extracted", "superseded", "only-in-episode", "ranked-out", "not-retrieved")
_TURN_ID = re.compile(r"S(\d+)T(\d+)")
_NON_ALNUM = re.compile(r"[^a-z0-9]+")


# --- data ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    """One haystack turn with its benchmark id `S<session index>T<turn index>`."""

    id: str
    session: int
    role: str
    text: str
    timestamp: float
    evidence: bool


@dataclass(frozen=True)
class Session:
    """One haystack session: its index in the haystack, its date and turns."""

    index: int
    date: str  # '30 May 2023'
    timestamp: float
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Question:
    """One LongMemEval question with its own haystack."""

    qid: str
    qtype: str
    question: str
    answer: str
    sessions: tuple[Session, ...]

    @property
    def scope(self) -> str:
        return f"lme-{self.qid}"

    @property
    def abstention(self) -> bool:
        return self.qid.endswith("_abs")

    @property
    def turns(self) -> dict[str, Turn]:
        return {turn.id: turn for session in self.sessions for turn in session.turns}

    @property
    def evidence(self) -> tuple[str, ...]:
        return tuple(t.id for s in self.sessions for t in s.turns if t.evidence)

    def chronological(self) -> list[Session]:
        """Sessions in date order (the haystack lists them shuffled); ties keep haystack order."""
        return sorted(self.sessions, key=lambda s: (s.timestamp, s.index))


def parse_date(text: str) -> float:
    """'2023/05/30 (Tue) 23:40' → POSIX seconds, read as UTC."""
    bare = re.sub(r"\s*\([A-Za-z]+\)\s*", " ", text.strip())
    return float(calendar.timegm(datetime.strptime(bare, "%Y/%m/%d %H:%M").timetuple()))


def parse_question(item: dict[str, Any]) -> Question:
    """One item of the data file."""
    sessions = []
    for s, (raw, when) in enumerate(zip(item["haystack_sessions"], item["haystack_dates"], strict=True)):
        stamp = parse_date(when)
        day = datetime.fromtimestamp(stamp, UTC)
        turns = tuple(
            Turn(
                id=f"S{s}T{j}",
                session=s,
                role=str(t["role"]),
                text=str(t["content"]),
                timestamp=stamp + TURN_STEP_S * j,
                evidence=bool(t.get("has_answer")),
            )
            for j, t in enumerate(raw)
        )
        sessions.append(Session(index=s, date=f"{day.day} {day:%B %Y}", timestamp=stamp, turns=turns))
    return Question(
        qid=str(item["question_id"]),
        qtype=str(item["question_type"]),
        question=str(item["question"]),
        answer=str(item["answer"]),
        sessions=tuple(sessions),
    )


def load(path: Path) -> list[Question]:
    """Every question of a LongMemEval file (JSON list, gzip or plain)."""
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return [parse_question(item) for item in json.loads(raw)]


def select(questions: Sequence[Question], types: Sequence[str], limit: int, quick: bool) -> list[Question]:
    """The questions of the given types, at most `limit` per type (0: all); quick: one with evidence
    of each of two types."""
    if quick:
        return [next(q for q in questions if q.qtype == t and q.evidence) for t in QUICK_TYPES]
    chosen: list[Question] = []
    for qtype in types:
        of_type = [q for q in questions if q.qtype == qtype]
        chosen += of_type[:limit] if limit else of_type
    return chosen


# --- the server and its API ------------------------------------------------------------------


def bench_config(text: str) -> str:
    """The config under test with `[extract] flush_after_s = 0` (any other value of it removed)."""
    tomllib.loads(text)  # a bad file fails here, before the server
    lines = [line for line in text.splitlines() if not re.match(r"\s*flush_after_s\s*=", line)]
    for i, line in enumerate(lines):
        if re.fullmatch(r"\s*\[extract\]\s*(#.*)?", line):
            lines.insert(i + 1, "flush_after_s = 0")
            break
    else:
        lines += ["", "[extract]", "flush_after_s = 0"]
    out = "\n".join(lines) + "\n"
    tomllib.loads(out)
    return out


# --- ingestion -------------------------------------------------------------------------------


def session_event(question: Question, session: Session) -> dict[str, Any]:
    """The `POST /tap/ingest` body of one session."""
    return {
        "scope": question.scope,
        "conversation": f"{question.qid}/S{session.index}",
        "source": "import",
        "messages": [{"role": t.role, "content": t.text, "id": t.id, "timestamp": t.timestamp} for t in session.turns],
    }


def wait_for(
    api: Api,
    done: Callable[[dict[str, int]], bool],
    *,
    stall_s: float,
    poll_s: float,
    observe: Callable[[dict[str, int]], None] = lambda _: None,
) -> dict[str, int]:
    """Poll the queue until `done(queue)`; RuntimeError when nothing moves for `stall_s` seconds."""
    last: tuple[int, ...] = ()
    moved = time.monotonic()
    while True:
        queue = api.queue()
        observe(queue)
        if done(queue):
            return queue
        state = tuple(queue.get(k, 0) for k in ("queued", "running", "done", "dead", "turns_waiting"))
        if state != last:
            last, moved = state, time.monotonic()
        elif time.monotonic() - moved > stall_s:
            raise RuntimeError(f"extraction made no progress for {stall_s:.0f} s: queue {queue}")
        time.sleep(poll_s)


def windows_closed(queue: dict[str, int]) -> bool:
    return queue.get("turns_waiting", 0) == 0


def drained(queue: dict[str, int]) -> bool:
    return queue.get("queued", 0) == 0 and queue.get("running", 0) == 0 and queue.get("turns_waiting", 0) == 0


def ingest_all(
    api: Api, questions: Sequence[Question], *, workers: int, window: int, progress: Callable[[str], None]
) -> dict[str, Any]:
    """Every question's sessions, `window` questions at a time, round by round (see the module
    docstring); the next group is posted while the worker still extracts the earlier ones. Waits for
    the empty queue."""
    posted = queued = requests = 0
    post_ms: list[float] = []
    barrier_s = 0.0
    started = time.perf_counter()
    drain_log = [0.0]

    def log_drain(queue: dict[str, int]) -> None:
        if time.perf_counter() - drain_log[0] >= 60:
            drain_log[0] = time.perf_counter()
            progress(f"{time.perf_counter() - started:.0f} s: queue {queue}")

    groups = [questions[i : i + max(1, window)] for i in range(0, len(questions), max(1, window))]
    with ThreadPoolExecutor(max(1, workers), thread_name_prefix="lme-post") as pool:
        for number, group in enumerate(groups, start=1):
            orders = [q.chronological() for q in group]
            for r in range(max(len(o) for o in orders)):
                events = [session_event(q, o[r]) for q, o in zip(group, orders, strict=True) if r < len(o)]
                for answer, wall in pool.map(lambda e: api.call("POST", "/tap/ingest", e, expect=202), events):
                    posted += int(answer["messages"])
                    queued += int(answer["queued"])
                    post_ms.append(wall)
                    requests += 1
                waited = time.perf_counter()
                queue = wait_for(api, windows_closed, stall_s=600, poll_s=0.3)
                barrier_s += time.perf_counter() - waited
            if number % 5 == 0 or number == len(groups):
                progress(
                    f"group {number}/{len(groups)}: {posted} turns posted in {time.perf_counter() - started:.0f} s, "
                    f"queue {queue}"
                )
    posted_s = time.perf_counter() - started
    final = wait_for(api, drained, stall_s=600, poll_s=2.0, observe=log_drain)
    seconds = time.perf_counter() - started
    progress(f"extraction drained {seconds - posted_s:.0f} s after the last post: queue {final}")
    return {
        "questions": len(questions),
        "sessions": requests,
        "turns_posted": posted,
        "turns_queued": queued,
        "chunks": final.get("done", 0) + final.get("dead", 0),
        "seconds": round(seconds, 1),
        "turns_per_s": round(posted / seconds, 1) if seconds else 0.0,
        "posting_s": round(posted_s, 1),
        "drain_after_last_post_s": round(seconds - posted_s, 1),
        "barrier_wait_s": round(barrier_s, 1),
        "post_ms": benchutil.summary_ms(post_ms),
        "status_polls_ms": benchutil.summary_ms(api.status_ms),
        "workers": workers,
        "window": window,
        "queue_at_end": final,
    }


# --- scoring ---------------------------------------------------------------------------------


def normalise(text: str) -> str:
    """Lower case, every run of non-alphanumerics one space, padded so whole words can be matched."""
    return f" {_NON_ALNUM.sub(' ', text.lower()).strip()} "


def short_answer(question: Question) -> bool:
    """Eligible for the answer-in-block control."""
    words = normalise(question.answer).split()
    return (
        0 < len(words) <= SHORT_ANSWER_WORDS
        and not question.abstention
        and question.qtype != "single-session-preference"
    )


def answer_in(question: Question, text: str) -> bool:
    return normalise(question.answer) in normalise(text)


def cited(memories: Iterable[dict[str, Any]]) -> set[str]:
    return {str(source) for memory in memories for source in memory.get("sources", [])}


def shuffle_citations(memories: Sequence[dict[str, Any]], question: Question, rng: random.Random) -> set[str]:
    """The control: each cited turn id replaced by a random turn id of the same session."""
    pools = {s.index: [t.id for t in s.turns] for s in question.sessions}
    out: set[str] = set()
    for source in sorted(cited(memories)):
        match = _TURN_ID.fullmatch(source)
        pool = pools.get(int(match.group(1)), []) if match else []
        out.add(rng.choice(pool) if pool else source)
    return out


def bm25_lines(question: Question) -> tuple[list[Turn], list[str], list[str]]:
    """The haystack's turns, rendered '[<date>] <role>: <text>', and bare (whitespace folded)."""
    turns, lines, bare = [], [], []
    for session in question.sessions:
        for turn in session.turns:
            text = " ".join(turn.text.split())
            turns.append(turn)
            lines.append(f"[{session.date}] {turn.role}: {text}")
            bare.append(text)
    return turns, lines, bare


def pack_estimate(texts: Sequence[str], budget: int) -> list[int]:
    """Greedy packing with the README's estimate: 1.3 tokens per word + 4 per turn."""
    used, chosen = 0.0, []
    for index, text in enumerate(texts):
        cost = 1.3 * len(text.split()) + 4
        if used + cost <= budget:
            used += cost
            chosen.append(index)
    return chosen


def run_bm25(question: Question, budget: int) -> dict[str, Any]:
    """BM25 over the question's raw turns: the baseline and the README-estimate reference."""
    turns, lines, bare = bm25_lines(question)
    started = time.perf_counter()
    index = BM25(lines)
    ranked = index.rank(question.question)
    index.close()
    used, chosen = 0, []
    for i in ranked:
        cost = count_tokens(lines[i]) + 1
        if used + cost <= budget:
            used += cost
            chosen.append(i)
    ms = (time.perf_counter() - started) * 1000
    plain = BM25(bare)
    ranked_bare = plain.rank(question.question)
    plain.close()
    estimate = [ranked_bare[i] for i in pack_estimate([bare[i] for i in ranked_bare], budget)]
    return {
        "cited": {turns[i].id for i in chosen},
        "text": "\n".join(lines[i] for i in chosen),
        "tokens": used,
        "ms": ms,
        "cited_estimate": {turns[i].id for i in estimate},
    }


# --- one question after ingestion ------------------------------------------------------------


def recall(api: Api, question: Question, budget: int, text: str | None = None) -> tuple[dict[str, Any], float]:
    return api.call(
        "POST",
        "/tap/recall",
        {"text": question.question if text is None else text, "scope": question.scope, "budget_tokens": budget},
    )


def reworded(question: Question) -> str:
    """The question's words in reverse order: another query (the recall cache misses it) of the
    same length and words, for the warm latency of a loaded scope."""
    return " ".join(reversed(question.question.split()))


def repack(
    ranking: Sequence[dict[str, Any]], budget: int, keep: Callable[[dict[str, Any]], bool], query: str
) -> list[str]:
    """Ids of the block tap.recall.engine.pack_block makes of the ranking's memories that pass `keep`, for
    the question (which cuts excerpts to its sentences)."""
    ranked = [(msgspec.convert(r["memory"], Memory), float(r["score"])) for r in ranking if keep(r["memory"])]
    return [chosen.memory.id for chosen in pack_block(ranked, budget, query=query).memories]


def diagnose(
    question: Question,
    block: dict[str, Any],
    memories: Sequence[dict[str, Any]],
    ranking: Sequence[dict[str, Any]],
    rescued: set[str],
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Why each evidence turn the block misses is missing, and what the scope holds.

    `memories`: every version in the scope (GET /tap/memories?all=1); `ranking`: the search results
    (GET /tap/memories/search); `rescued`: the turns a block without episodes would cite.
    """
    ranks = {r["memory"]["id"]: rank for rank, r in enumerate(ranking, start=1)}
    in_block = {m["id"] for m in block["memories"]}
    active = [m for m in memories if not m.get("superseded_by")]
    store = {
        "memories": len(active),
        "versions": len(memories),
        "by_kind": dict(Counter(m["kind"] for m in active)),
        "ranking_size": len(ranks),
        "block_not_in_ranking": sorted(in_block - set(ranks)),
        "deepest_rank_in_block": max((ranks.get(i, 0) for i in in_block), default=0),
    }
    citing: dict[str, list[dict[str, Any]]] = {}
    for memory in memories:
        for source in memory.get("sources", []):
            citing.setdefault(str(source), []).append(memory)
    turns = question.turns
    rows = []
    for turn_id in [e for e in question.evidence if e not in cited(block["memories"])]:
        turn = turns[turn_id]
        found = citing.get(turn_id, [])
        live = [m for m in found if not m.get("superseded_by")]
        facts = [m for m in live if m["kind"] != "episode"]
        ranked = [ranks[m["id"]] for m in live if m["id"] in ranks]
        fact_ranked = [ranks[m["id"]] for m in facts if m["id"] in ranks]
        if not found:
            reason = "not-extracted"
        elif not live:
            reason = "superseded"
        elif not facts:
            reason = "only-in-episode"
        elif fact_ranked:
            reason = "ranked-out"
        else:
            reason = "not-retrieved"
        rows.append(
            {
                "turn": turn_id,
                "reason": reason,
                "role": turn.role,
                "words": len(turn.text.split()),
                "excerpt": excerpt(turn.text),
                "best_rank": min(ranked) if ranked else None,
                "best_fact_rank": min(fact_ranked) if fact_ranked else None,
                "block_memories": len(block["memories"]),
                "rescued_without_episodes": turn_id in rescued,
                "citing": [
                    {
                        "kind": m["kind"],
                        "active": not m.get("superseded_by"),
                        "tokens": count_tokens(m["content"]),
                        "cited_turns": len(m.get("sources", [])),
                        "rank": ranks.get(m["id"]),
                        "content": excerpt(m["content"], 240),
                    }
                    for m in sorted(found, key=lambda m: (m["kind"] == "episode", bool(m.get("superseded_by"))))[:6]
                ],
            }
        )
    return rows, store


def excerpt(text: str, chars: int = EXCERPT_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= chars else flat[: chars - 1] + "…"


@dataclass
class Row:
    """Everything measured for one question."""

    question: Question
    tap_cited: set[str] = field(default_factory=set)
    bm25_cited: set[str] = field(default_factory=set)
    bm25_estimate_cited: set[str] = field(default_factory=set)
    shuffled_cited: set[str] = field(default_factory=set)
    tap_answer: bool = False
    bm25_answer: bool = False
    block_tokens: int = 0
    bm25_tokens: int = 0
    episode_tokens: int = 0
    block_kinds: Counter[str] = field(default_factory=Counter)
    block_widths: list[tuple[str, int]] = field(default_factory=list)  # (kind, cited turns) per memory
    elapsed_ms: float = 0.0
    wall_ms: float = 0.0
    warm_elapsed_ms: float = 0.0
    warm_wall_ms: float = 0.0
    cached_elapsed_ms: float = 0.0
    cached_wall_ms: float = 0.0
    repack_matches: bool = False
    repacked_cited: set[str] = field(default_factory=set)
    no_episode_cited: set[str] = field(default_factory=set)
    misses: list[dict[str, Any]] = field(default_factory=list)
    store: dict[str, Any] = field(default_factory=dict)

    def frac(self, got: set[str]) -> float:
        evidence = self.question.evidence
        return sum(1 for e in evidence if e in got) / len(evidence)

    def as_json(self) -> dict[str, Any]:
        q = self.question
        evidence = q.evidence
        out: dict[str, Any] = {
            "question_id": q.qid,
            "type": q.qtype,
            "question": q.question,
            "answer": excerpt(q.answer, 160),
            "evidence": list(evidence),
            "evidence_roles": [q.turns[e].role for e in evidence],
            "tap_cited_evidence": [e for e in evidence if e in self.tap_cited],
            "bm25_cited_evidence": [e for e in evidence if e in self.bm25_cited],
            "block_tokens": self.block_tokens,
            "episode_tokens": self.episode_tokens,
            "block_kinds": dict(self.block_kinds),
            "recall_ms": round(self.elapsed_ms, 2),
            "recall_wall_ms": round(self.wall_ms, 2),
            "store": self.store,
        }
        if short_answer(q):
            out["answer_in_block"] = {"tap": self.tap_answer, "bm25": self.bm25_answer}
        out["misses"] = self.misses
        return out


def score_question(api: Api, question: Question, block: dict[str, Any], budget: int) -> Row:
    """Tap's block against the evidence, the baseline, the controls and the diagnostics."""
    row = Row(question)
    memories = block["memories"]
    row.tap_cited = cited(memories)
    row.block_tokens = int(block["tokens"])
    row.episode_tokens = sum(int(m["tokens"]) for m in memories if m["kind"] == "episode")
    row.block_kinds = Counter(str(m["kind"]) for m in memories)
    row.block_widths = [(str(m["kind"]), len(m.get("sources", []))) for m in memories]
    row.shuffled_cited = shuffle_citations(memories, question, random.Random(f"{SEED}:{question.qid}"))
    bm25 = run_bm25(question, budget)
    row.bm25_cited, row.bm25_estimate_cited = bm25["cited"], bm25["cited_estimate"]
    row.bm25_tokens = bm25["tokens"]
    row.tap_answer = answer_in(question, block["block"])
    row.bm25_answer = answer_in(question, bm25["text"])
    versions = api.get("/tap/memories", scope=question.scope, limit=100000, all=1)["memories"]
    ranking = api.get("/tap/memories/search", q=question.question, scope=question.scope, limit=BIG_RANKING)["results"]
    by_id = {r["memory"]["id"]: r["memory"] for r in ranking}
    same = repack(ranking, budget, lambda m: True, question.question)
    row.repack_matches = same == [m["id"] for m in memories]
    row.repacked_cited = cited(by_id[i] for i in same)
    row.no_episode_cited = cited(
        by_id[i] for i in repack(ranking, budget, lambda m: m["kind"] != "episode", question.question)
    )
    row.misses, row.store = diagnose(question, block, versions, ranking, row.no_episode_cited)
    return row


# --- report ----------------------------------------------------------------------------------


def pct(values: Sequence[float]) -> float:
    return round(100 * statistics.fmean(values), 1) if values else float("nan")


def mean(values: Sequence[float], digits: int = 1) -> float:
    return round(statistics.fmean(values), digits) if values else float("nan")


def summarise(rows: Sequence[Row]) -> dict[str, Any]:
    """ER figures, controls and diagnostics of a group of questions."""
    scored = [r for r in rows if r.question.evidence]
    short = [r for r in rows if short_answer(r.question)]
    numeric = [r for r in short if not normalise(r.question.answer).strip().isdigit()]

    def er(got: Callable[[Row], set[str]]) -> dict[str, float]:
        fracs = [r.frac(got(r)) for r in scored]
        return {"er_frac": pct(fracs), "er_all": pct([float(f == 1.0) for f in fracs])}

    evidence_roles: Counter[str] = Counter()
    hit_roles: dict[str, Counter[str]] = {"tap": Counter(), "bm25": Counter()}
    for r in scored:
        for e in r.question.evidence:
            role = r.question.turns[e].role
            evidence_roles[role] += 1
            hit_roles["tap"][role] += e in r.tap_cited
            hit_roles["bm25"][role] += e in r.bm25_cited
    misses = [m for r in scored for m in r.misses]
    citing_tokens = [c["tokens"] for m in misses for c in m["citing"] if c["active"]]
    return {
        "n": len(rows),
        "with_evidence": len(scored),
        "abstention": sum(1 for r in rows if r.question.abstention),
        "tap": er(lambda r: r.tap_cited),
        "bm25": er(lambda r: r.bm25_cited),
        "bm25_readme_estimate": er(lambda r: r.bm25_estimate_cited),
        "shuffled_citations": er(lambda r: r.shuffled_cited),
        "tap_repacked": er(lambda r: r.repacked_cited),
        "tap_without_episodes": er(lambda r: r.no_episode_cited),
        "repack_matches_block": sum(1 for r in rows if r.repack_matches),
        "answer_in_block": {
            "n": len(short),
            "tap": pct([float(r.tap_answer) for r in short]),
            "bm25": pct([float(r.bm25_answer) for r in short]),
            "n_non_numeric": len(numeric),
            "tap_non_numeric": pct([float(r.tap_answer) for r in numeric]),
            "bm25_non_numeric": pct([float(r.bm25_answer) for r in numeric]),
        },
        "evidence_recall_by_role": {
            role: {
                "turns": n,
                "tap": round(100 * hit_roles["tap"][role] / n, 1),
                "bm25": round(100 * hit_roles["bm25"][role] / n, 1),
            }
            for role, n in sorted(evidence_roles.items())
        },
        "blocks": {
            "mean_tokens": mean([r.block_tokens for r in scored]),
            "mean_episode_tokens": mean([r.episode_tokens for r in scored]),
            "mean_memories": mean([sum(r.block_kinds.values()) for r in scored]),
            "kinds": dict(sum((r.block_kinds for r in scored), Counter())),
            "mean_cited_turns_episode": mean([n for r in scored for k, n in r.block_widths if k == "episode"]),
            "mean_cited_turns_other": mean([n for r in scored for k, n in r.block_widths if k != "episode"]),
            "bm25_mean_tokens": mean([r.bm25_tokens for r in scored]),
        },
        "store": {
            "mean_memories": mean([r.store.get("memories", 0) for r in rows]),
            "mean_ranking_size": mean([r.store.get("ranking_size", 0) for r in rows]),
        },
        "misses": {
            "evidence_turns": sum(len(r.question.evidence) for r in scored),
            "missed": len(misses),
            "reasons": {reason: sum(1 for m in misses if m["reason"] == reason) for reason in REASONS},
            "roles": dict(Counter(m["role"] for m in misses)),
            "mean_words_missed": mean([m["words"] for m in misses]),
            "mean_words_hit": mean(
                [len(r.question.turns[e].text.split()) for r in scored for e in r.question.evidence if e in r.tap_cited]
            ),
            "mean_tokens_citing_memories": mean(citing_tokens),
            "rescued_without_episodes": sum(1 for m in misses if m["rescued_without_episodes"]),
            "ranked_out_best_rank_median": statistics.median(ranks)
            if (ranks := [m["best_fact_rank"] for m in misses if m["reason"] == "ranked-out"])
            else None,
        },
    }


def code_version() -> str:
    """The commit the code under test comes from (`+dirty` with local changes), if it is a git tree."""
    try:
        head = subprocess.run(
            ["git", "-C", str(benchutil.ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
        )
        if head.returncode != 0:
            return "unknown (not a git work tree)"
        dirty = subprocess.run(
            ["git", "-C", str(benchutil.ROOT), "status", "--porcelain", "--", "tap", "proxy", "store"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def latency(rows: Sequence[Row]) -> dict[str, Any]:
    return {
        "cold": {
            "server_ms": benchutil.summary_ms([r.elapsed_ms for r in rows]),
            "wall_ms": benchutil.summary_ms([r.wall_ms for r in rows]),
        },
        "warm": {
            "server_ms": benchutil.summary_ms([r.warm_elapsed_ms for r in rows]),
            "wall_ms": benchutil.summary_ms([r.warm_wall_ms for r in rows]),
        },
        "cached": {
            "server_ms": benchutil.summary_ms([r.cached_elapsed_ms for r in rows]),
            "wall_ms": benchutil.summary_ms([r.cached_wall_ms for r in rows]),
        },
    }


# --- driver ----------------------------------------------------------------------------------


@contextmanager
def data_dir(keep: Path | None) -> Iterator[Path]:
    """A temp data dir removed afterwards, or `keep` (created if missing, left in place)."""
    if keep is None:
        with tempfile.TemporaryDirectory(prefix="tap-lme-") as home:
            yield Path(home)
    else:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep


def reusable(home: Path, questions: Sequence[Question], config_text: str) -> dict[str, Any] | None:
    """The ingestion stats of a finished ingestion of these questions and config in `home`, None for an
    empty dir; RuntimeError for a dir holding anything else (never mix two ingestions)."""
    marker = home / MARKER
    if marker.exists():
        saved = json.loads(marker.read_text())
        if saved.get("questions") != [q.qid for q in questions] or saved.get("config") != config_text:
            raise RuntimeError(f"{home} holds an ingestion of other questions or another config; use a fresh --home")
        return dict(saved["ingestion"])
    if any(home.iterdir()):
        raise RuntimeError(f"{home} is not empty and holds no finished LongMemEval ingestion; use a fresh --home")
    return None


def run(
    questions: Sequence[Question],
    *,
    config_text: str,
    budget: int,
    workers: int,
    window: int,
    home_dir: Path | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Ingest, recall, score and diagnose every question on one `tap serve`; the JSON result.

    The server's data dir is a temp dir, or `home_dir` (kept; when it holds a finished ingestion of
    the same questions and config, that ingestion is reused and only recall and scoring run)."""
    started = time.perf_counter()
    load_at_start = [round(x, 2) for x in os.getloadavg()]
    with data_dir(home_dir) as home:
        previous = reusable(home, questions, config_text)
        server = Server(home, bench_config(config_text), code=benchutil.ROOT).start()
        try:
            api = Api(server.url, server.token)
            health = api.get("/tap/health")
            progress(f"tap serve at {server.url} ({health.get('embedder')}); {len(questions)} questions")
            if previous is None:
                ingestion = ingest_all(api, questions, workers=workers, window=window, progress=progress)
                ingestion["code"] = code_version()
                (home / MARKER).write_text(
                    json.dumps({"questions": [q.qid for q in questions], "config": config_text, "ingestion": ingestion})
                )
            else:
                ingestion = {**previous, "reused": str(home)}
                progress(f"reusing the ingestion in {home} ({previous.get('code')})")
            blocks, warm, cached = [], [], []
            for question in questions:  # one at a time on an idle server: clean latencies
                blocks.append(recall(api, question, budget))  # cold: the scope's first recall
                warm.append(recall(api, question, budget, reworded(question)))  # warm: another query, loaded scope
                cached.append(recall(api, question, budget))  # cached: the first request again at once
            with ThreadPoolExecutor(max(1, workers), thread_name_prefix="lme-score") as pool:
                rows = list(
                    pool.map(
                        lambda qb: score_question(api, qb[0], qb[1][0], budget), zip(questions, blocks, strict=True)
                    )
                )
            for row, (block, wall), (warm_block, warm_wall), (again, again_wall) in zip(
                rows, blocks, warm, cached, strict=True
            ):
                row.elapsed_ms, row.wall_ms = float(block["elapsed_ms"]), wall
                row.warm_elapsed_ms, row.warm_wall_ms = float(warm_block["elapsed_ms"]), warm_wall
                row.cached_elapsed_ms, row.cached_wall_ms = float(again["elapsed_ms"]), again_wall
            status = api.get("/tap/status")
            stats = api.get("/tap/stats")
            rss = benchutil.rss_mb(server.pid)
        finally:
            log_tail = server.stop()
    rows.sort(key=lambda r: (TYPES.index(r.question.qtype) if r.question.qtype in TYPES else 99, r.question.qid))
    types = [t for t in TYPES if any(r.question.qtype == t for r in rows)]
    extraction = status.get("extraction", {})
    result: dict[str, Any] = {
        "benchmark": "longmemeval",
        "machine": benchutil.machine(),
        "code": code_version(),
        "budget_tokens": budget,
        "config": config_text or "(offline default: rules extractor, heuristic gate, episodes, ONNX MiniLM)",
        "config_change": "[extract] flush_after_s = 0 (sessions arrive whole; same chunks, no 60 s idle wait)",
        "token_counter": "tap.tokens.count_tokens (tap's own, never under-counts)",
        "method": {
            "ingestion": "one POST /tap/ingest per session (scope lme-<question_id>, conversation "
            "<question_id>/S<i>, source import, ids S<i>T<j>, haystack date + 10 s per turn), sessions in date "
            "order; round r posts every question's r-th session, then waits for turns_waiting = 0; finally "
            "waits for an empty queue (queued = running = turns_waiting = 0)",
            "recall": "POST /tap/recall {text: question, scope, budget_tokens}, sequential on the idle server: "
            "cold (first recall of each scope), warm (the words reversed: another query on a loaded scope), "
            "cached (the first request again at once); ER uses the cold blocks",
            "bm25": "SQLite FTS5 BM25 (k1=1.2, b=0.75, porter unicode61) over the haystack's raw turns "
            "'[<session date>] <role>: <text>', query words OR-ed without stop words, packed greedily into the "
            "budget with tap's token counter (no header)",
            "bm25_readme_estimate": "the same BM25 over the bare turn text, packed with the README's estimate "
            "(1.3 tokens per word + 4 per turn): checks this BM25 against the README's figures",
            "answer_in_block": f"questions with an answer of at most {SHORT_ANSWER_WORDS} words (not abstention, "
            "not preference): the normalised answer occurs as whole words in the block text",
            "shuffled_citations": "tap's blocks with each cited turn id replaced by a random turn id of the same "
            "session",
            "diagnostics": "GET /tap/memories?all=1 (which versions cite the missed turn) and GET "
            f"/tap/memories/search?limit={BIG_RANKING} (the ranking recall packs from); reasons in order: "
            + ", ".join(REASONS),
        },
        "questions": {
            "selected": len(rows),
            "with_evidence": sum(1 for r in rows if r.question.evidence),
            "abstention": sum(1 for r in rows if r.question.abstention),
            "abstention_with_evidence": [r.question.qid for r in rows if r.question.abstention and r.question.evidence],
            "skipped_no_evidence": [r.question.qid for r in rows if not r.question.evidence],
        },
        "readme_bm25": README_BM25,
        "by_type": {t: summarise([r for r in rows if r.question.qtype == t]) for t in types},
        "all": summarise(rows),
        "ingestion": ingestion,
        "recall_latency": latency(rows),
        "server": {
            "rss_mb_at_end": round(rss, 1),
            "extraction": {k: extraction.get(k) for k in ("processed", "failures", "gate_pass_rate", "counters")},
            "dead_letters": extraction.get("dead_letters", []),
            "store": stats,
            "log_tail": log_tail[-1500:],
        },
        "seconds_total": round(time.perf_counter() - started, 1),
        "loadavg": {"start": load_at_start, "end": [round(x, 2) for x in os.getloadavg()]},
        "rows": [r.as_json() for r in rows],
    }
    return result


def print_report(result: dict[str, Any]) -> None:
    """The per-type tables: ER tap vs BM25, controls, then the miss reasons."""
    groups = [*result["by_type"].items(), ("all", result["all"])]
    rows: list[list[object]] = []
    for name, s in groups:
        ans = s["answer_in_block"]
        rows.append(
            [
                name,
                s["with_evidence"],
                s["tap"]["er_frac"],
                s["bm25"]["er_frac"],
                s["tap"]["er_all"],
                s["bm25"]["er_all"],
                s["shuffled_citations"]["er_frac"],
                s["tap_without_episodes"]["er_frac"],
                s["bm25_readme_estimate"]["er_frac"],
                result["readme_bm25"].get(name, ""),
                f"{ans['tap']:.0f}/{ans['bm25']:.0f} (n={ans['n']})" if ans["n"] else "-",
            ]
        )
    q = result["questions"]
    print(
        f"LongMemEval_S ER@{result['budget_tokens']} (%), {q['with_evidence']} questions with evidence "
        f"({q['abstention']} abstention, {len(q['skipped_no_evidence'])} without evidence skipped)"
    )
    headers = ["type", "n", "tap frac", "BM25 frac", "tap all", "BM25 all", "shuffled", "no-episode"]
    headers += ["BM25 est", "README", "answer tap/BM25"]
    print(benchutil.table(headers, rows))
    print()
    drows: list[list[object]] = []
    for name, s in groups:
        m = s["misses"]
        roles = m["roles"]
        drows.append(
            [
                name,
                f"{m['missed']}/{m['evidence_turns']}",
                *(m["reasons"][r] for r in REASONS),
                f"{roles.get('user', 0)}/{roles.get('assistant', 0)}",
                m["mean_words_missed"],
                s["blocks"]["mean_episode_tokens"],
                s["blocks"]["mean_tokens"],
            ]
        )
    print("missed evidence turns by reason (tap)")
    headers = ["type", "missed", *REASONS, "user/asst", "words", "episode tok", "block tok"]
    print(benchutil.table(headers, drows))
    ing, lat = result["ingestion"], result["recall_latency"]
    reused = f" (reused from {ing['reused']}: an earlier run's figures)" if ing.get("reused") else ""
    print(
        f"\ningestion{reused}: {ing['turns_posted']} turns in {ing['seconds']} s through the API = "
        f"{ing['turns_per_s']} turns/s (extraction included; drained {ing['drain_after_last_post_s']} s "
        "after the last post)"
    )
    for kind in ("cold", "warm", "cached"):
        server, wall = lat[kind]["server_ms"], lat[kind]["wall_ms"]
        print(
            f"recall {kind}: server p50 {server.get('p50')} ms, p95 {server.get('p95')} ms; "
            f"wall p50 {wall.get('p50')} ms, p95 {wall.get('p95')} ms"
        )
    repack = result["all"]["repack_matches_block"]
    print(f"repacking the search ranking reproduced {repack} of {result['all']['n']} blocks")
    print(f"server RSS at end {result['server']['rss_mb_at_end']} MB; total {result['seconds_total']} s")
    if result["server"]["dead_letters"]:
        print(f"WARNING: dead letters: {result['server']['dead_letters']}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="path to lme_s_dev.json.gz")
    parser.add_argument("--limit", type=int, default=0, help="at most N questions per type (0: all)")
    parser.add_argument("--types", default="", help="comma-separated question types (default: all six)")
    parser.add_argument("--budget", type=int, default=500, help="token budget of the recall block")
    parser.add_argument("--config", type=Path, default=None, help="a tap config file (default: the offline one)")
    parser.add_argument("--out", type=Path, default=None, help="where to write the JSON result")
    parser.add_argument("--quick", action="store_true", help="one question of each of two types (smoke run)")
    parser.add_argument("--workers", type=int, default=2, help="concurrent API requests while ingesting/scoring")
    parser.add_argument(
        "--home",
        type=Path,
        default=None,
        help="keep the server's data dir here; a finished ingestion of the same questions is reused",
    )
    parser.add_argument(
        "--window", type=int, default=WINDOW, help="questions ingested side by side (their sessions interleaved)"
    )
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the server and remove its data dir

    if not args.data.is_file():
        print(f"LongMemEval data not found at {args.data}; pass --data PATH", file=sys.stderr)
        return 2
    types = [t.strip() for t in args.types.split(",") if t.strip()] or list(TYPES)
    unknown = sorted(set(types) - set(TYPES))
    if unknown:
        print(f"unknown question types {unknown}; known: {', '.join(TYPES)}", file=sys.stderr)
        return 2
    questions = select(load(args.data), types, args.limit, args.quick)
    config_text = args.config.read_text() if args.config else ""
    bench_config(config_text)  # fail before the long run on a bad config
    try:
        result = run(
            questions,
            config_text=config_text,
            budget=args.budget,
            workers=args.workers,
            window=args.window,
            home_dir=args.home,
            progress=benchutil.note,
        )
    except RuntimeError as exc:
        print(f"longmemeval: {exc}", file=sys.stderr)
        return 1
    result["mode"] = "quick" if args.quick else "limited" if args.limit or args.types else "full"
    result["data"] = args.data.name
    path = benchutil.write_result("longmemeval", result, args.out)
    print_report(result)
    print(f"\nwritten to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
