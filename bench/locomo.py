"""Recall quality on LoCoMo: evidence recall at a token budget (ER@B), with baselines and controls.

Run: ``./dev bench locomo [--data PATH] [--budget 500] [--config-variant default|no-episodes]...
[--config FILE]... [--limit-conversations N] [--quick] [--synthetic] [--home DIR]``. Writes
``bench/results/locomo.json`` and prints a table. The data (CC BY-NC 4.0) is read from
``../shared/data/locomo/locomo10.json`` or ``--data``; nothing of it is copied into the repo.

Method (../shared/data/locomo/README.md):
- each conversation gets a fresh data dir and store; its sessions are fed in order through tap's one
  ingestion entry point (``Runtime.ingestor.ingest``), one ``IngestEvent`` per session (conversation
  id ``<sample_id>/session_<n>``, speaker names as ``name``, dia_ids as message ids, the session
  date as every turn's timestamp, ``blip_caption`` rendered as ``[shares a photo: <caption>]``),
  then ``Runtime.worker.drain()`` extracts and stores, as ``tap serve`` does between sessions.
  The questions are never visible to ingestion;
- each question goes to ``Runtime.recall.recall(question, scope=...)``, exactly as the proxy calls
  it (tap's own token counter, the block header included in the budget). An evidence turn is
  recalled when some memory in the block cites it (``Memory.sources``);
- ER_frac = mean of |evidence ∩ recalled| / |evidence|, ER_all = share of questions with all their
  evidence recalled; categories 1-4 together (n = 1,536 after the README's evidence repairs) and
  one by one, category 5 apart;
- in the same run: BM25 over raw turns (``[<session date>] <speaker>: <text>``, SQLite FTS5 with
  Porter stemming, k1 = 1.2, b = 0.75, the query's words OR-ed without stop words, packed greedily
  into the same budget with the same counter and no header: a stronger baseline than one paying
  tap's header; it scores about the README's 59.4), random
  memories of tap's store (floor), and tap's own blocks with every citation replaced by a random
  dia_id of the same session (must collapse; otherwise citations are too wide).

``--home DIR`` keeps each conversation's data dir; a later run with the same config reuses its
ingestion (for working on recall: scoring only, about a minute instead of the ingestion).

Variants: ``default`` (rules extractor + episodes: the offline default config) and ``no-episodes``
(rules only, ``[extract] store_episodes = false``); ``--config FILE`` runs any config instead, e.g.
an LLM extractor: ``bench/configs/anthropic.toml`` (``[extract] provider = "anthropic"``, needs
ANTHROPIC_API_KEY) or ``bench/configs/ollama.toml`` (a local model). The LLM extractor sees the
turns labelled with their dia_ids and cites them, so the same metric applies unchanged.
"""

from __future__ import annotations

import argparse
import calendar
import hashlib
import random
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import benchutil
import msgspec
from bm25_turns import BM25, pack_lines

from tap.config import LoadedConfig, parse_config
from tap.recall.engine import pack_block
from tap.records import IngestEvent, Memory, Message
from tap.wiring.runtime import Runtime, open_runtime

DEFAULT_DATA = benchutil.ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"
DATE_FORMAT = "%I:%M %p on %d %B, %Y"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
SCORED = (1, 2, 3, 4)
VARIANTS = {"default": "", "no-episodes": "[extract]\nstore_episodes = false\n"}
SCOPE = "locomo"
SEED = 7
RETRY_WAIT_S = 120.0
_SESSION_KEY = re.compile(r"session_(\d+)")
_DIA_ID = re.compile(r"D(\d+):(\d+)")


# --- data ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    """One LoCoMo turn, rendered as tap receives it."""

    dia_id: str
    speaker: str
    text: str
    session: int
    timestamp: float
    date: str


@dataclass(frozen=True)
class Question:
    """One QA item with its repaired evidence."""

    question: str
    category: int
    evidence: tuple[str, ...]
    index: int = -1  # position in the sample's `qa` list


@dataclass
class Conversation:
    """One LoCoMo sample: speakers, sessions in order, questions."""

    sample_id: str
    speakers: tuple[str, str]
    sessions: list[list[Turn]]
    questions: list[Question]
    repairs: Counter[str] = field(default_factory=Counter)

    @property
    def turns(self) -> list[Turn]:
        return [turn for session in self.sessions for turn in session]


def parse_date(text: str) -> float:
    """'1:56 pm on 8 May, 2023' → POSIX seconds, read as UTC."""
    return float(calendar.timegm(datetime.strptime(text.strip(), DATE_FORMAT).timetuple()))


def render_text(turn: dict[str, Any]) -> str:
    """A turn's text, with its shared image's caption as '[shares a photo: <caption>]'."""
    text = str(turn.get("text", "")).strip()
    caption = str(turn.get("blip_caption") or "").strip()
    return f"{text} [shares a photo: {caption}]".strip() if caption else text


def repair_evidence(raw: Iterable[Any], valid: set[str], repairs: Counter[str]) -> tuple[str, ...]:
    """The README's repairs: split joined ids, fix 'D:11:26' and 'D30:05', drop unknown ids."""
    out: list[str] = []
    for item in raw:
        pieces = [p for p in re.split(r"[;,\s]+", str(item)) if p]
        if len(pieces) > 1:
            repairs["split"] += 1
        for piece in pieces:
            fixed = re.sub(r"^D:(\d+):", r"D\1:", piece)
            match = _DIA_ID.fullmatch(fixed)
            if match is None:
                repairs["dropped-malformed"] += 1
                continue
            normal = f"D{int(match.group(1))}:{int(match.group(2))}"
            if normal != piece:
                repairs["normalised"] += 1
            if normal not in valid:
                repairs["dropped-unknown"] += 1
                continue
            if normal not in out:
                out.append(normal)
    return tuple(out)


def parse_conversation(sample: dict[str, Any]) -> Conversation:
    """One sample of locomo10.json; sessions are the `session_<n>` lists, in number order."""
    conv = sample["conversation"]
    numbers = sorted(int(m.group(1)) for key in conv if (m := _SESSION_KEY.fullmatch(key)))
    sessions: list[list[Turn]] = []
    for n in numbers:
        when = conv[f"session_{n}_date_time"]
        stamp = parse_date(when)
        day = datetime.strptime(when.strip(), DATE_FORMAT).strftime("%-d %B %Y")
        sessions.append(
            [
                Turn(
                    dia_id=t["dia_id"], speaker=t["speaker"], text=render_text(t), session=n, timestamp=stamp, date=day
                )
                for t in conv[f"session_{n}"]
            ]
        )
    valid = {turn.dia_id for session in sessions for turn in session}
    repairs: Counter[str] = Counter()
    questions = []
    for index, qa in enumerate(sample["qa"]):
        evidence = repair_evidence(qa.get("evidence", []), valid, repairs)
        if evidence:
            questions.append(Question(str(qa["question"]), int(qa["category"]), evidence, index))
        else:
            repairs["question-without-evidence"] += 1
    return Conversation(
        sample_id=str(sample["sample_id"]),
        speakers=(str(conv["speaker_a"]), str(conv["speaker_b"])),
        sessions=sessions,
        questions=questions,
        repairs=repairs,
    )


def load(path: Path) -> list[Conversation]:
    """All conversations of a LoCoMo file."""
    return [parse_conversation(sample) for sample in msgspec.json.decode(path.read_bytes())]


def shrink(conversation: Conversation, sessions: int) -> Conversation:
    """The first `sessions` sessions, and only the questions answerable from them (quick mode)."""
    kept = conversation.sessions[:sessions]
    ids = {turn.dia_id for session in kept for turn in session}
    questions = [q for q in conversation.questions if set(q.evidence) <= ids]
    return Conversation(conversation.sample_id, conversation.speakers, kept, questions, conversation.repairs)


def synthetic() -> list[Conversation]:
    """A tiny made-up conversation in LoCoMo's shape (for smoke runs without the data)."""
    lines = [
        (1, "9:00 am on 3 March, 2023", "Ana", "Hi Ben! I started a pottery class last week, it's so relaxing."),
        (1, "9:00 am on 3 March, 2023", "Ben", "Nice! I'm training for the Lisbon half marathon in October."),
        (1, "9:00 am on 3 March, 2023", "Ana", "Wow. My sister Clara is running it too, she lives in Porto."),
        (1, "9:00 am on 3 March, 2023", "Ben", "I adopted a dog named Pixel yesterday, a grey whippet."),
        (2, "6:30 pm on 20 April, 2023", "Ana", "I finished my first vase, a blue one with a crackle glaze."),
        (2, "6:30 pm on 20 April, 2023", "Ben", "Pixel chewed my running shoes, so I bought new Asics."),
        (2, "6:30 pm on 20 April, 2023", "Ana", "Clara and I are planning a trip to Kyoto next spring."),
        (2, "6:30 pm on 20 April, 2023", "Ben", "I love Kyoto, the temples in autumn are unforgettable."),
    ]
    sessions: dict[int, list[Turn]] = {}
    for session, when, speaker, text in lines:
        turns = sessions.setdefault(session, [])
        day = datetime.strptime(when, DATE_FORMAT).strftime("%-d %B %Y")
        dia = f"D{session}:{len(turns) + 1}"
        turns.append(Turn(dia, speaker, text, session, parse_date(when), day))
    questions = [
        Question("What class did Ana start?", 4, ("D1:1",)),
        Question("What is the name of Ben's dog?", 4, ("D1:4",)),
        Question("Where does Ana's sister live and which race is she running?", 1, ("D1:2", "D1:3")),
        Question("When did Ben adopt his dog?", 2, ("D1:4",)),
        Question("What would Ana's vase look like?", 3, ("D2:1",)),
        Question("What did Ben's cat chew?", 5, ("D2:2",)),
    ]
    return [Conversation("synthetic-1", ("Ana", "Ben"), [sessions[1], sessions[2]], questions)]


# --- scoring ---------------------------------------------------------------------------------


@dataclass
class Scores:
    """Per-question scores of one system, by category."""

    frac: dict[int, list[float]] = field(default_factory=dict)
    all_: dict[int, list[float]] = field(default_factory=dict)
    tokens: list[int] = field(default_factory=list)
    latency_ms: list[float] = field(default_factory=list)

    def add(self, question: Question, recalled: set[str], tokens: int, latency_ms: float | None = None) -> None:
        hit = sum(1 for e in question.evidence if e in recalled)
        self.frac.setdefault(question.category, []).append(hit / len(question.evidence))
        self.all_.setdefault(question.category, []).append(float(hit == len(question.evidence)))
        if question.category in SCORED:
            self.tokens.append(tokens)
        if latency_ms is not None and question.category in SCORED:
            self.latency_ms.append(latency_ms)

    def report(self) -> dict[str, Any]:
        def pct(values: list[float]) -> float:
            return round(100 * statistics.fmean(values), 1) if values else float("nan")

        scored_frac = [v for c in SCORED for v in self.frac.get(c, [])]
        scored_all = [v for c in SCORED for v in self.all_.get(c, [])]
        out: dict[str, Any] = {
            "cats_1_4": {"n": len(scored_frac), "er_frac": pct(scored_frac), "er_all": pct(scored_all)},
            "by_category": {
                f"{c} {CATEGORIES[c]}": {
                    "n": len(self.frac.get(c, [])),
                    "er_frac": pct(self.frac.get(c, [])),
                    "er_all": pct(self.all_.get(c, [])),
                }
                for c in (*SCORED, 5)
            },
            "mean_tokens": round(statistics.fmean(self.tokens), 1) if self.tokens else 0.0,
        }
        if self.latency_ms:
            out["recall_ms"] = benchutil.summary_ms(self.latency_ms)
        return out


def cited(memories: Iterable[Memory]) -> set[str]:
    """Every turn id the memories cite."""
    return {source for memory in memories for source in memory.sources}


# --- one conversation ------------------------------------------------------------------------


def ingest(rt: Runtime, conversation: Conversation) -> dict[str, float]:
    """Feed the sessions in order through the ingestion entry point; extract after each session."""
    roles = {conversation.speakers[0]: "user", conversation.speakers[1]: "assistant"}
    started = time.perf_counter()
    turns = 0
    for session in conversation.sessions:
        messages = [
            Message(
                role=roles.get(t.speaker, "user"), content=t.text, name=t.speaker, id=t.dia_id, timestamp=t.timestamp
            )
            for t in session
        ]
        event = IngestEvent(
            scope=SCOPE,
            conversation=f"{conversation.sample_id}/session_{session[0].session}",
            source="logtail",
            messages=messages,
        )
        turns += rt.ingestor.ingest(event)
        drain(rt)
    return {"turns": turns, "seconds": time.perf_counter() - started}


def drain(rt: Runtime, max_wait_s: float = RETRY_WAIT_S) -> None:
    """Extract every queued chunk; wait for retries that are due soon (an LLM extractor's transient
    failures back off for seconds), but not for a spent daily budget (postponed to UTC midnight)."""
    waited = 0.0
    rt.worker.drain()
    while (wakeup := rt.queue.next_wakeup()) is not None and waited < max_wait_s:
        delay = max(0.0, wakeup - time.time())
        if delay > min(RETRY_WAIT_S, max_wait_s - waited):
            return
        time.sleep(delay + 0.05)
        waited += delay
        rt.worker.drain(flush=False)


def active_memories(rt: Runtime) -> list[Memory]:
    """Every active memory of the benchmark scope."""
    return [m for m in rt.store.iter_memories(scope=SCOPE) if m.active]


@dataclass
class VariantRun:
    """Accumulated results of one tap configuration over the conversations."""

    name: str
    toml: str
    tap: Scores = field(default_factory=Scores)
    random_memories: Scores = field(default_factory=Scores)
    shuffled: Scores = field(default_factory=Scores)
    memories: Counter[str] = field(default_factory=Counter)
    cited_store: list[int] = field(default_factory=list)
    cited_block: list[int] = field(default_factory=list)
    block_kinds: Counter[str] = field(default_factory=Counter)
    ingest_s: float = 0.0
    turns: int = 0
    queue_left: Counter[str] = field(default_factory=Counter)
    misses: list[dict[str, Any]] = field(default_factory=list)


MARKER = "locomo-ingested.json"  # written to a kept --home data dir once its ingestion has finished


def ingestion_key(run: VariantRun, conversation: Conversation) -> str:
    """What a kept ingestion depends on: the config and the conversation (not the code: --home is a
    tool for working on recall; rerun without it after changing extraction)."""
    payload = msgspec.json.encode([run.toml, conversation.sample_id, [t.dia_id for t in conversation.turns]])
    return hashlib.sha256(payload).hexdigest()[:16]


@contextmanager
def data_dir_for(run: VariantRun, conversation: Conversation, keep: Path | None) -> Iterator[tuple[Path, bool]]:
    """(data dir, already ingested): a temporary one, or one kept under `keep` across runs."""
    if keep is None:
        with tempfile.TemporaryDirectory(prefix="tap-locomo-") as home:
            yield Path(home), False
        return
    home = keep / run.name / conversation.sample_id
    marker = home / MARKER
    if marker.is_file():
        saved = msgspec.json.decode(marker.read_bytes())
        if saved.get("key") != ingestion_key(run, conversation):
            raise RuntimeError(f"{home} holds an ingestion of another config or data; use a fresh --home")
        yield home, True
        return
    if home.exists() and any(home.iterdir()):
        raise RuntimeError(f"{home} is not empty and holds no finished ingestion; use a fresh --home")
    home.mkdir(parents=True, exist_ok=True)
    yield home, False


def run_variant_on(
    run: VariantRun, conversation: Conversation, budget: int, rng: random.Random, keep: Path | None = None
) -> None:
    """Ingest one conversation into a fresh store with this variant's config (or reuse a kept
    ingestion), then ask every question."""
    with data_dir_for(run, conversation, keep) as (home, ingested):
        loaded = LoadedConfig(config=parse_config(run.toml), path=None, data_dir=home)
        rt = open_runtime(loaded)
        try:
            if ingested:
                stats = msgspec.json.decode((home / MARKER).read_bytes())["stats"]
            else:
                stats = ingest(rt, conversation)
                if keep is not None:
                    marker = {"key": ingestion_key(run, conversation), "stats": stats}
                    (home / MARKER).write_bytes(msgspec.json.encode(marker))
            run.ingest_s += stats["seconds"]
            run.turns += int(stats["turns"])
            counts = rt.queue.counts()
            run.queue_left.update({k: v for k, v in counts.items() if k not in ("done",) and v})
            memories = active_memories(rt)
            run.memories.update(m.kind for m in memories)
            run.cited_store += [len(m.sources) for m in memories]
            session_ids: dict[int, list[str]] = {}
            for turn in conversation.turns:
                session_ids.setdefault(turn.session, []).append(turn.dia_id)
            for question in conversation.questions:
                started = time.perf_counter()
                result = rt.recall.recall(question.question, scope=SCOPE, budget_tokens=budget)
                latency = (time.perf_counter() - started) * 1000
                recalled = [r.memory for r in result.memories]
                got = cited(recalled)
                run.tap.add(question, got, result.tokens, latency)
                run.cited_block += [len(m.sources) for m in recalled]
                run.block_kinds.update(m.kind for m in recalled)
                if question.category in SCORED and not set(question.evidence) <= got and len(run.misses) < 400:
                    run.misses.append(  # ids only: the data's text stays out of the results (CC BY-NC)
                        {
                            "conversation": conversation.sample_id,
                            "qa_index": question.index,
                            "category": question.category,
                            "evidence": list(question.evidence),
                            "recalled_evidence": sorted(set(question.evidence) & got),
                            "block_memories": len(recalled),
                        }
                    )
                run.shuffled.add(question, shuffle_citations(recalled, session_ids, rng), result.tokens)
                shuffled = rng.sample(memories, len(memories))
                floor = pack_block([(m, 0.0) for m in shuffled], budget)
                run.random_memories.add(question, cited(r.memory for r in floor.memories), floor.tokens)
            rt.recall.flush_access()
        finally:
            rt.close()


def shuffle_citations(memories: Sequence[Memory], session_ids: dict[int, list[str]], rng: random.Random) -> set[str]:
    """The control: each cited dia_id replaced by a random dia_id of the same session."""
    out: set[str] = set()
    for memory in memories:
        for source in memory.sources:
            match = _DIA_ID.fullmatch(source)
            pool = session_ids.get(int(match.group(1)), []) if match else []
            out.add(rng.choice(pool) if pool else source)
    return out


def run_bm25(conversations: Sequence[Conversation], budget: int) -> Scores:
    """BM25 over raw turns, rendered '[<session date>] <speaker>: <text>', same budget and counter."""
    scores = Scores()
    for conversation in conversations:
        turns = conversation.turns
        lines = [f"[{t.date}] {t.speaker}: {' '.join(t.text.split())}" for t in turns]
        index = BM25(lines)
        for question in conversation.questions:
            started = time.perf_counter()
            ranked = index.rank(question.question)
            chosen, used = pack_lines([lines[i] for i in ranked], budget)
            latency = (time.perf_counter() - started) * 1000
            scores.add(question, {turns[ranked[i]].dia_id for i in chosen}, used, latency)
        index.close()
    return scores


# --- driver ----------------------------------------------------------------------------------


def run(
    conversations: Sequence[Conversation],
    variants: Sequence[tuple[str, str]],
    budget: int,
    progress: Callable[[str], None] = lambda _: None,
    keep: Path | None = None,
) -> dict[str, Any]:
    """Every variant and the baselines over the conversations; the JSON result."""
    rng = random.Random(SEED)
    runs = [VariantRun(name, toml) for name, toml in variants]
    for conversation in conversations:
        for variant in runs:
            started = time.perf_counter()
            run_variant_on(variant, conversation, budget, rng, keep)
            progress(f"{conversation.sample_id} {variant.name}: {time.perf_counter() - started:.0f} s")
    bm25 = run_bm25(conversations, budget)
    repairs: Counter[str] = Counter()
    for conversation in conversations:
        repairs.update(conversation.repairs)
    result: dict[str, Any] = {
        "benchmark": "locomo",
        "machine": benchutil.machine(),
        "budget_tokens": budget,
        "token_counter": "tap.tokens.count_tokens (tap's own, never under-counts)",
        "conversations": [c.sample_id for c in conversations],
        "questions": {
            "cats_1_4": sum(1 for c in conversations for q in c.questions if q.category in SCORED),
            "cat_5": sum(1 for c in conversations for q in c.questions if q.category == 5),
        },
        "evidence_repairs": dict(repairs),
        "method": {
            "ingestion": "one IngestEvent per session through Runtime.ingestor.ingest (conversation "
            "'<sample_id>/session_<n>', names, dia_ids as message ids, session date as timestamps, "
            "photos as '[shares a photo: <caption>]'), Runtime.worker.drain() after each session; "
            "questions never visible to ingestion",
            "recall": "Runtime.recall.recall(question, scope, budget_tokens) as the proxy calls it; "
            "block header and footer count against the budget",
            "bm25": "SQLite FTS5 BM25 (k1=1.2, b=0.75, porter unicode61) over raw turns '[<session date>] "
            "<speaker>: <text>', query words OR-ed without stop words, packed greedily into the full budget "
            "with tap's token counter (no header: the baseline keeps every token for turns)",
            "random_memories": "tap's active memories in random order, packed into the budget with tap's header",
            "shuffled_citations": "tap's blocks with each cited dia_id replaced by a random dia_id of the same session",
        },
        "baselines": {"bm25_raw_turns": bm25.report()},
        "variants": {},
    }
    for variant in runs:
        result["variants"][variant.name] = {
            "config": variant.toml or "(defaults: [extract] provider = rules, store_episodes = true)",
            "tap": variant.tap.report(),
            "controls": {
                "random_memories": variant.random_memories.report(),
                "shuffled_citations": variant.shuffled.report(),
            },
            "memories_by_kind": dict(sorted(variant.memories.items())),
            "memories_total": sum(variant.memories.values()),
            "block_memories_by_kind": dict(sorted(variant.block_kinds.items())),
            "mean_cited_turns_per_memory": {
                "stored": round(statistics.fmean(variant.cited_store), 2) if variant.cited_store else 0.0,
                "in_blocks": round(statistics.fmean(variant.cited_block), 2) if variant.cited_block else 0.0,
            },
            "ingestion": {
                "turns": variant.turns,
                "seconds": round(variant.ingest_s, 1),
                "turns_per_s": round(variant.turns / variant.ingest_s, 1) if variant.ingest_s else 0.0,
                "queue_left": dict(variant.queue_left),
            },
            "misses_sample": variant.misses[:60],
        }
    return result


def print_report(result: dict[str, Any]) -> None:
    """ER_frac / ER_all per category for tap, the baseline and the controls."""
    systems: list[tuple[str, dict[str, Any]]] = [("BM25 raw turns", result["baselines"]["bm25_raw_turns"])]
    for name, variant in result["variants"].items():
        systems += [
            (f"tap {name}", variant["tap"]),
            (f"  random memories ({name})", variant["controls"]["random_memories"]),
            (f"  shuffled citations ({name})", variant["controls"]["shuffled_citations"]),
        ]
    headers = ["system", "1-4 frac", "1-4 all"]
    headers += [f"{c} {CATEGORIES[c][:6]}" for c in (*SCORED, 5)]
    headers += ["tokens"]
    rows = []
    for name, report in systems:
        row: list[object] = [name, report["cats_1_4"]["er_frac"], report["cats_1_4"]["er_all"]]
        for label, cat in report["by_category"].items():
            del label
            row.append(f"{cat['er_frac']:.1f}/{cat['er_all']:.1f}")
        row.append(report["mean_tokens"])
        rows.append(row)
    print(f"ER@{result['budget_tokens']} (ER_frac / ER_all, %), n = {result['questions']}")
    print(benchutil.table(headers, rows))
    print()
    for name, variant in result["variants"].items():
        left = variant["ingestion"]["queue_left"]
        if left:
            print(f"WARNING: tap {name}: chunks not extracted {left} (extractor failing or budget spent?)")
        lat = variant["tap"].get("recall_ms", {})
        cites = variant["mean_cited_turns_per_memory"]
        print(
            f"tap {name}: {variant['memories_total']} memories {variant['memories_by_kind']}, "
            f"cited turns/memory {cites['stored']} (in blocks {cites['in_blocks']}), recall p50/p95 "
            f"{lat.get('p50')}/{lat.get('p95')} ms, ingestion {variant['ingestion']['turns_per_s']} turns/s"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="path to locomo10.json")
    parser.add_argument("--budget", type=int, default=500, help="token budget of the recall block")
    parser.add_argument(
        "--config-variant",
        action="append",
        choices=sorted(VARIANTS),
        help="built-in config to run (repeatable; default: all of them unless --config is given)",
    )
    parser.add_argument(
        "--config", action="append", type=Path, default=[], help="a tap config file to run (repeatable)"
    )
    parser.add_argument("--limit-conversations", type=int, default=0, help="only the first N conversations")
    parser.add_argument("--quick", action="store_true", help="1 conversation, first 3 sessions (smoke run)")
    parser.add_argument("--synthetic", action="store_true", help="a tiny built-in conversation instead of LoCoMo")
    parser.add_argument("--out", type=Path, default=None, help="where to write the JSON result")
    parser.add_argument(
        "--home",
        type=Path,
        default=None,
        help="keep each conversation's data dir here; a later run with the same config reuses its ingestion "
        "(recall and scoring only; rerun without it after changing extraction)",
    )
    args = parser.parse_args(argv)

    if args.synthetic:
        conversations = synthetic()
    else:
        if not args.data.is_file():
            print(f"LoCoMo data not found at {args.data}; pass --data PATH (or --synthetic)", file=sys.stderr)
            return 2
        conversations = load(args.data)
        if args.quick:
            conversations = [shrink(conversations[0], 3)]
        elif args.limit_conversations:
            conversations = conversations[: args.limit_conversations]
    names = args.config_variant or ([] if args.config else list(VARIANTS))
    variants = [(name, VARIANTS[name]) for name in names]
    variants += [(path.stem, path.read_text()) for path in args.config]
    for _, toml in variants:
        parse_config(toml)  # fail before the long run on a bad config
    result = run(conversations, variants, args.budget, progress=benchutil.note, keep=args.home)
    result["mode"] = "synthetic" if args.synthetic else "quick" if args.quick else "full"
    path = benchutil.write_result("locomo", result, args.out)
    print_report(result)
    print(f"\nwritten to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
