"""Six months of chat, with and without consolidation: duplicates, store size and memory quality.

Run: ``./dev bench consolidate [--conversations q01,q07] [--quick] [--seed N] [--out PATH]``.
Writes ``bench/results/consolidate.json`` and prints a table.

The chat is generated from the labelled quality set (``bench/quality/``, see bench/quality.py):
every person's sessions are spread, in order, over the first five months of a simulated half year
(2025-01-01 to 2025-07-01), and between and after them come *recap* sessions, the way people
talk to an assistant for months: a few of their earlier statements said again in other words
("btw, …", "as i said …", "… lol"), and a chit-chat turn of theirs said again (one every 9 days
on average, drawn with a fixed seed). Only statements whose labels no later label replaces are
restated (restating a stale fact is a different test), and every restated turn is added to the
labels of the turn it repeats, so the quality metrics score the generated chat exactly as they
score the original one. Every user turn is also recalled at its own time, as the proxy would,
so recall counts ("not recalled for 90 days") are real. One simulated clock drives the whole
runtime (`open_runtime(now=…)`): memories' creation and access times, recency, archiving.

Arms (the same chat; each person in a fresh data dir per ingestion):
- **before**: six months of ingestion, no consolidation;
- **after**: the same store after one `tap memories consolidate` at the end (default config);
- **after+excerpts**: the same store after one more with `archive_excerpts = true`;
- **background**: a second ingestion with consolidation run as the background job would, as the
  months go by (each scope once a day, on every simulated day the person talked).
Measured per arm: the quality metrics of bench/quality.py (precision, junk, recall, duplicates,
supersession, current value first, superseded memories in blocks) plus archived memories in
blocks; the store: active statements, active excerpts, archived, superseded versions, all
records; near-duplicates left (what a dry run would still merge). Timings are ratios against the
ingestion of the same run (2 shared cores: absolute times are noise).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import benchutil
import msgspec
import quality

from tap.config import LoadedConfig, parse_config
from tap.extract.consolidation import Consolidator
from tap.records import IngestEvent, Message
from tap.wiring.runtime import Runtime, open_runtime

START = datetime(2025, 1, 1, 9, 0, tzinfo=UTC).timestamp()
DAY = 86400.0
HALF_YEAR_DAYS = 181
ORIGINAL_SPAN_DAYS = 150
RECAP_EVERY_DAYS = 9.0
TURN_SPACING_S = 120.0
PREFIXES = ("btw, ", "fyi ", "oh and ", "", "also, ", "anyway, ")
SUFFIXES = ("", " lol", " fwiw", "!", " :)")
REPLIES = ("Got it.", "Noted, thanks!", "Thanks for the reminder.", "Good to know.")
QUICK = quality.QUICK


@dataclass
class Simulated:
    """One person's six months: sessions (start, turns) in time order, and the labels extended to
    cover the restated turns."""

    conversation: quality.Conversation
    sessions: list[tuple[float, quality.Session]] = field(default_factory=list)


class Clock:
    """The simulated time every part of the runtime reads."""

    def __init__(self, at: float) -> None:
        self.at = at

    def __call__(self) -> float:
        return self.at


def restatement(text: str, rng: random.Random) -> str:
    """The same statement in other (chattier) words."""
    body = text.strip()
    prefix = rng.choice(PREFIXES)
    if prefix and body[:1].isupper() and not body[:2].isupper():
        body = body[0].lower() + body[1:]
    return f"{prefix}{body}{rng.choice(SUFFIXES)}"


def simulate(conv: quality.Conversation, seed: int) -> Simulated:
    """Spread the sessions over five months and add recap sessions (see the module docstring)."""
    rng = random.Random(f"{seed}:{conv.id}")
    originals = sorted(conv.sessions, key=lambda s: s.start)
    span = ORIGINAL_SPAN_DAYS * DAY
    starts = (
        [START + span * i / max(1, len(originals) - 1) for i in range(len(originals))]
        if len(originals) > 1
        else [START]
    )
    replaced = set(quality.replaced_by(conv))
    labelled = {t for label in conv.labels for t in label.turns}
    unstable = {t for label in conv.labels if label.id in replaced or label.optional for t in label.turns}
    stable = labelled - unstable  # every label of the turn is current to the end: restating it is not stale
    by_id = {t.id: t for t in conv.turns}
    extra_turns: dict[str, list[str]] = {}
    timeline: list[tuple[float, quality.Session]] = list(zip(starts, originals, strict=True))
    said: list[str] = []  # stable user statements said so far (turn ids)
    chat: list[str] = []
    recap_index = 0
    day = 0.0
    for start, session in zip(starts, originals, strict=True):
        while True:
            day += rng.expovariate(1 / RECAP_EVERY_DAYS)
            at = START + day * DAY
            if at >= start or at >= START + HALF_YEAR_DAYS * DAY:
                break
            if said:
                recap_index += 1
                timeline.append((at, _recap(conv, recap_index, said, chat, by_id, extra_turns, rng)))
        for turn in session.turns:
            if turn.role == "user" and turn.id in stable and not turn.name:
                said.append(turn.id)
            elif turn.role == "user" and turn.id not in labelled and not turn.name:
                chat.append(turn.id)
    while True:
        day += rng.expovariate(1 / RECAP_EVERY_DAYS)
        if day >= HALF_YEAR_DAYS:
            break
        if said:
            recap_index += 1
            timeline.append((START + day * DAY, _recap(conv, recap_index, said, chat, by_id, extra_turns, rng)))
    labels = [
        msgspec.structs.replace(label, turns=[*label.turns, *(c for t in label.turns for c in extra_turns.get(t, []))])
        for label in conv.labels
    ]
    extended = msgspec.structs.replace(
        conv, labels=labels, sessions=[s for _, s in sorted(timeline, key=lambda p: p[0])]
    )
    return Simulated(extended, sorted(timeline, key=lambda p: p[0]))


def _recap(
    conv: quality.Conversation,
    index: int,
    said: Sequence[str],
    chat: Sequence[str],
    by_id: dict[str, quality.Turn],
    extra_turns: dict[str, list[str]],
    rng: random.Random,
) -> quality.Session:
    """A short session restating a few earlier statements (and a chit-chat turn)."""
    session_id = f"{conv.id}r{index}"
    picks = rng.sample(list(dict.fromkeys(said)), k=min(len(set(said)), rng.randint(1, 3)))
    turns: list[quality.Turn] = []
    for source in [*picks, *(rng.sample(list(chat), 1) if chat and rng.random() < 0.5 else [])]:
        turn_id = f"{session_id}t{len(turns) + 1}"
        turns.append(quality.Turn(id=turn_id, role="user", text=restatement(by_id[source].text, rng)))
        extra_turns.setdefault(source, []).append(turn_id)
        turns.append(quality.Turn(id=f"{session_id}t{len(turns) + 1}", role="assistant", text=rng.choice(REPLIES)))
    return quality.Session(id=session_id, date=datetime.fromtimestamp(START, UTC).isoformat(), turns=turns)


# --- running --------------------------------------------------------------------------------------


@dataclass
class Arm:
    """One arm's results for one person."""

    name: str
    scored: quality.Scored
    store: Counter[str]
    archived_in_blocks: int
    near_duplicates_left: int
    seconds: dict[str, float]


def feed_session(
    rt: Runtime, conv: quality.Conversation, clock: Clock, start: float, session: quality.Session
) -> float:
    """Recall every user turn at its time (as the proxy would), ingest the session, extract it;
    returns the seconds spent recalling."""
    recalling = 0.0
    messages = []
    for index, turn in enumerate(session.turns):
        clock.at = start + index * TURN_SPACING_S
        if turn.role == "user":
            began = time.perf_counter()
            rt.recall.recall(turn.text, scope=conv.scope)
            recalling += time.perf_counter() - began
        messages.append(Message(role=turn.role, content=turn.text, name=turn.name, id=turn.id, timestamp=clock.at))
    rt.ingestor.ingest(
        IngestEvent(scope=conv.scope, conversation=f"{conv.id}/{session.id}", source=conv.source, messages=messages)
    )
    rt.worker.drain()
    return recalling


def measure(rt: Runtime, conv: quality.Conversation, clock: Clock) -> tuple[quality.Scored, Counter[str], int, int]:
    """Quality, store counts, archived memories in blocks, near-duplicates left (a dry run)."""
    rt.recall.flush_access()
    memories = list(rt.store.iter_memories(scope=conv.scope))
    probes = []
    archived = 0
    for label in quality.current_updates(conv):
        answer = rt.recall.recall(label.question, scope=conv.scope)
        block = [r.memory for r in answer.memories]
        stored = {m.id: m for m in memories}
        archived += sum(1 for m in block if stored.get(m.id, m).archived)
        probes.append(quality.Probe(label.id, label.question, block))
    scored = quality.score(conv, memories, probes)
    store: Counter[str] = Counter()
    for m in memories:
        layer = "excerpts" if m.kind == "episode" else "statements"
        store["records"] += 1
        if not m.current:
            store["superseded"] += 1
        elif m.archived:
            store[f"archived_{layer}"] += 1
        else:
            store[f"active_{layer}"] += 1
        store["conflicts"] += bool(m.active and m.conflicts_with)
    left = rt.consolidator.plan(conv.scope)
    return scored, store, archived, sum(len(g.members) for g in left.groups)


EXCERPTS_TOML = "[consolidate]\narchive_excerpts = true\n"


def run_person(sim: Simulated, background: bool) -> list[Arm]:
    """Six months for one person in a fresh data dir. Without `background`: measured before any
    consolidation ("before"), after one consolidation at the end ("after"), and after one more
    with `archive_excerpts = true` ("after+excerpts"); with it: consolidated as the days go by
    ("background")."""
    conv = sim.conversation
    clock = Clock(START)
    seconds: Counter[str] = Counter()
    arms: list[Arm] = []
    with tempfile.TemporaryDirectory(prefix="tap-consolidate-") as home:
        rt = open_runtime(LoadedConfig(config=parse_config(""), path=None, data_dir=Path(home)), now=clock)
        try:
            last_day = -1
            for start, session in sim.sessions:
                began = time.perf_counter()
                seconds["recall"] += feed_session(rt, conv, clock, start, session)
                seconds["ingest"] += time.perf_counter() - began
                today = int((start - START) // DAY)
                if background and today != last_day:
                    began = time.perf_counter()
                    rt.consolidator.consolidate_scope(conv.scope)
                    seconds["consolidate"] += time.perf_counter() - began
                last_day = today
            clock.at = START + HALF_YEAR_DAYS * DAY
            if background:
                return [Arm("background", *measure(rt, conv, clock), dict(seconds))]
            arms.append(Arm("before", *measure(rt, conv, clock), dict(seconds)))
            began = time.perf_counter()
            rt.consolidator.run(conv.scope)
            seconds["consolidate"] = time.perf_counter() - began
            arms.append(Arm("after", *measure(rt, conv, clock), dict(seconds)))
            excerpts = Consolidator(
                rt.store, rt.consolidator.journal, parse_config(EXCERPTS_TOML).consolidate, now=clock
            )
            began = time.perf_counter()
            excerpts.run(conv.scope)
            seconds["consolidate"] += time.perf_counter() - began
            arms.append(Arm("after+excerpts", *measure(rt, conv, clock), dict(seconds)))
        finally:
            rt.close()
    return arms


def rates_of(arms: Sequence[Arm]) -> dict[str, Any]:
    """Quality rates, store totals and timings summed over people."""
    counts: Counter[str] = Counter()
    store: Counter[str] = Counter()
    seconds: Counter[str] = Counter()
    for arm in arms:
        counts.update(arm.scored.counts)
        store.update(arm.store)
        seconds.update(arm.seconds)
    rates = quality.rates(counts)
    return {
        "quality": {k: v for k, v in rates.items() if not isinstance(v, dict)},
        "update_outcomes": rates["update_outcomes"],
        "duplicates": counts["duplicates"],
        "near_duplicates_left": sum(a.near_duplicates_left for a in arms),
        "archived_in_blocks": sum(a.archived_in_blocks for a in arms),
        "store": dict(sorted(store.items())),
        "seconds": {k: round(v, 2) for k, v in sorted(seconds.items())},
        "counts": dict(sorted(counts.items())),
    }


QUALITY_KEYS = (
    "precision",
    "junk_rate",
    "recall",
    "duplicate_rate",
    "supersession_accuracy",
    "wrong_supersessions",
    "current_first",
    "current_top1",
    "superseded_in_blocks",
)
BETTER_LOW = ("junk_rate", "duplicate_rate", "wrong_supersessions", "superseded_in_blocks")


def verdicts(before: dict[str, Any], other: dict[str, Any]) -> dict[str, str]:
    """Per quality metric: 'same', 'better' or 'WORSE' than before."""
    out = {}
    for key in QUALITY_KEYS:
        b, a = before["quality"][key], other["quality"][key]
        if a is None or b is None or a == b:
            out[key] = "same"
            continue
        better = a < b if key in BETTER_LOW else a > b
        out[key] = "better" if better else "WORSE"
    return out


def print_report(result: dict[str, Any]) -> None:
    arms = result["arms"]
    names = list(arms)
    rows: list[list[object]] = []
    for key in QUALITY_KEYS:
        rows.append([key, *(arms[n]["quality"][key] for n in names)])
    rows.append(["duplicates (label-matched)", *(arms[n]["duplicates"] for n in names)])
    rows.append(["near-duplicates left (dry run)", *(arms[n]["near_duplicates_left"] for n in names)])
    rows.append(["archived memories in blocks", *(arms[n]["archived_in_blocks"] for n in names)])
    for key in (
        "active_statements",
        "active_excerpts",
        "archived_statements",
        "archived_excerpts",
        "superseded",
        "records",
        "conflicts",
    ):
        rows.append([f"store: {key}", *(arms[n]["store"].get(key, 0) for n in names)])
    print(benchutil.table(["metric", *names], rows))
    for name in names[1:]:
        worse = [k for k, v in result["verdicts"][name].items() if v == "WORSE"]
        print(f"{name} vs before: " + ("quality unchanged or better" if not worse else f"WORSE on {', '.join(worse)}"))
    print(f"timings: {result['timings']}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--conversations", default="", help="comma-separated conversation ids (default: every dev conversation)"
    )
    parser.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}")
    parser.add_argument("--seed", type=int, default=2026, help="the recap generator's seed")
    parser.add_argument("--no-background", action="store_true", help="skip the background arm (a second ingestion)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    # the dev split only: the test split stays unread by anything but the quality benchmark itself
    conversations = [c for c in quality.load() if c.split == "dev"]
    if args.quick:
        conversations = [c for c in conversations if c.id in QUICK]
    elif args.conversations:
        wanted = {x.strip() for x in args.conversations.split(",")}
        conversations = [c for c in conversations if c.id in wanted]
    sims = [simulate(c, args.seed) for c in conversations]
    load_before = os.getloadavg()
    results: dict[str, list[Arm]] = {}
    for sim in sims:
        for background in (False, True) if not args.no_background else (False,):
            for arm in run_person(sim, background):
                results.setdefault(arm.name, []).append(arm)
        benchutil.note(f"{sim.conversation.id}: done")
    arm_names = list(results)
    arms = {name: rates_of(found) for name, found in results.items()}
    first = arm_names[0]
    generated = sum(len(s.turns) for sim in sims for _, s in sim.sessions)
    original = sum(len(c.turns) for c in conversations)
    result = {
        "benchmark": "consolidate",
        "machine": benchutil.machine(),
        "code": quality.code_version(),
        "load_average": {"before": load_before, "after": os.getloadavg()},
        "seed": args.seed,
        "simulation": {
            "people": len(sims),
            "days": HALF_YEAR_DAYS,
            "sessions": sum(len(sim.sessions) for sim in sims),
            "turns": generated,
            "original_turns": original,
            "restated_or_repeated_turns": generated - original,
        },
        "config": msgspec.to_builtins(parse_config("").consolidate),
        "arms": arms,
        "verdicts": {name: verdicts(arms[first], arms[name]) for name in arm_names[1:]},
        "timings": {
            name: {
                "consolidate_s": arms[name]["seconds"].get("consolidate", 0.0),
                "consolidate_per_ingest": round(
                    arms[name]["seconds"].get("consolidate", 0.0) / max(arms[name]["seconds"].get("ingest", 0.0), 1e-9),
                    4,
                ),
            }
            for name in arm_names
        },
    }
    path = benchutil.write_result(
        "consolidate" if not (args.quick or args.conversations) else "consolidate-partial", result, args.out
    )
    print_report(result)
    print(f"\nwritten to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
