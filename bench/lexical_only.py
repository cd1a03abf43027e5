"""What a BM25-only recall (the fallback admission uses under overload: tap/recall/admission.py) finds,
against the full hybrid recall, on the stores the LongMemEval and LoCoMo benchmarks kept.

Run: ``./dev bench lexical_only --lme-home DIR --locomo-home DIR [--budget 500]
[--variants default,no-episodes] [--skip-lme] [--skip-locomo]``, where the homes are the data
dirs of ``./dev bench longmemeval --home DIR`` and ``./dev bench locomo --home DIR`` (ingested
already). Writes ``bench/results/lexical-only-recall.json`` and prints the tables.

Method: each home is copied to a temporary folder and only the copy is opened, in process, with
open_runtime and the config the benchmark used:
- LongMemEval: <home>/bench-config.toml; the questions the home was ingested for (the ids in
  <home>/lme-ingested.json, read from ``--lme-data``); the block as POST /tap/recall returns it
  (recall_view); scored with the benchmark's own cited / Row / summarise (ER_frac, ER_all per type);
- LoCoMo: each conversation's kept data dir <home>/<variant>/<sample_id> with the variant's config
  (locomo.VARIANTS, checked against the dir's locomo-ingested.json); every question recalled in
  scope "locomo" as the benchmark does; scored with locomo.cited / Scores.
Per question: hybrid (the scope's first recall), BM25-only, then the benchmark's "warm" query (the
words reversed) both ways, for latency only (RecallResult.elapsed_ms, what the server reports).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import benchutil  # puts the repo root on sys.path, telemetry off
import locomo
import longmemeval as lme

from tap.config import LoadedConfig, parse_config
from tap.memories.views import recall_view
from tap.wiring.runtime import open_runtime

RESULTS = Path(__file__).parent / "results" / "lexical-only-recall.json"
COLUMNS = f"{'hybrid frac':>11} {'lexical frac':>12} {'delta':>6}  {'hybrid all':>10} {'lexical all':>11}"


def copy_store(src: Path, into: Path) -> Path:
    """A copy of a kept data dir (the benchmark's own is never opened)."""
    if not src.is_dir():
        raise SystemExit(f"no data dir at {src}: keep one with the benchmark's --home first")
    dst = into / src.name
    subprocess.run(["cp", "-a", str(src), str(dst)], check=True)
    return dst


def p50(values: list[float]) -> float:
    return round(statistics.median(values), 2) if values else float("nan")


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# --- LongMemEval ------------------------------------------------------------------------------


def run_lme(home: Path, budget: int, data: Path) -> dict[str, Any]:
    marker_path = home / lme.MARKER
    if not marker_path.is_file():
        raise SystemExit(f"{home} holds no finished LongMemEval ingestion ({lme.MARKER} is missing)")
    marker = json.loads(marker_path.read_text())
    by_id = {q.qid: q for q in lme.load(data)}
    missing = [qid for qid in marker["questions"] if qid not in by_id]
    if missing:
        raise SystemExit(f"questions of the kept ingestion are not in {data}: {missing[:5]}")
    questions = [by_id[qid] for qid in marker["questions"]]
    config_path = home / "bench-config.toml"
    config_text = config_path.read_text()
    if config_text != lme.bench_config(marker["config"]):
        raise SystemExit("bench-config.toml is not bench_config(<the ingestion's config>)")
    loaded = LoadedConfig(config=parse_config(config_text), path=config_path, data_dir=home)
    started = time.perf_counter()
    rt = open_runtime(loaded)
    log(f"LongMemEval: runtime open in {time.perf_counter() - started:.1f} s; {len(questions)} questions")
    rows: dict[str, list[lme.Row]] = {"hybrid": [], "lexical": []}
    ms: dict[str, list[float]] = {k: [] for k in ("hybrid_cold", "lexical", "hybrid_warm", "lexical_warm")}
    tokens: dict[str, list[int]] = {"hybrid": [], "lexical": []}
    try:
        for i, q in enumerate(questions, start=1):
            views = {
                "hybrid": rt.memories.recall_json(q.question, scope=q.scope, budget_tokens=budget),
                "lexical": recall_view(
                    rt.recall.recall(q.question, scope=q.scope, budget_tokens=budget, lexical_only=True)
                ),
            }
            ms["hybrid_cold"].append(views["hybrid"]["elapsed_ms"])
            ms["lexical"].append(views["lexical"]["elapsed_ms"])
            warm = lme.reworded(q)
            ms["hybrid_warm"].append(rt.recall.recall(warm, scope=q.scope, budget_tokens=budget).elapsed_ms)
            ms["lexical_warm"].append(
                rt.recall.recall(warm, scope=q.scope, budget_tokens=budget, lexical_only=True).elapsed_ms
            )
            for mode, view in views.items():
                row = lme.Row(q)
                row.tap_cited = lme.cited(view["memories"])
                row.tap_answer = lme.answer_in(q, view["block"])
                row.block_tokens = int(view["tokens"])
                rows[mode].append(row)
                if q.evidence:
                    tokens[mode].append(row.block_tokens)
            if i % 20 == 0:
                log(f"  {i}/{len(questions)}")
    finally:
        rt.close()
    out: dict[str, Any] = {"questions": len(questions), "latency_ms": {k: p50(v) for k, v in ms.items()}}
    for mode, mode_rows in rows.items():
        by_type = {}
        for t in [t for t in lme.TYPES if any(r.question.qtype == t for r in mode_rows)]:
            s = lme.summarise([r for r in mode_rows if r.question.qtype == t])
            by_type[t] = {"n": s["with_evidence"], **s["tap"]}
        s = lme.summarise(mode_rows)
        by_type["all"] = {"n": s["with_evidence"], **s["tap"]}
        out[mode] = {
            "by_type": by_type,
            "answer_in_block": s["answer_in_block"]["tap"],
            "answer_in_block_n": s["answer_in_block"]["n"],
            "mean_block_tokens": round(statistics.fmean(tokens[mode]), 1),
        }
    # per-question check of the hybrid blocks against the bench's own result file
    saved_path = Path(benchutil.ROOT) / "bench" / "results" / "longmemeval.json"
    if saved_path.is_file():
        saved = {r["question_id"]: set(r["tap_cited_evidence"]) for r in json.loads(saved_path.read_text())["rows"]}
        differ = [
            r.question.qid
            for r in rows["hybrid"]
            if r.question.qid in saved and {e for e in r.question.evidence if e in r.tap_cited} != saved[r.question.qid]
        ]
        out["hybrid_vs_bench_results_file"] = {"compared": len(saved), "questions_differing": differ}
    out["lexical_lost_vs_hybrid"] = sum(
        1
        for h, x in zip(rows["hybrid"], rows["lexical"], strict=True)
        if h.question.evidence and x.frac(x.tap_cited) < h.frac(h.tap_cited)
    )
    out["lexical_gained_vs_hybrid"] = sum(
        1
        for h, x in zip(rows["hybrid"], rows["lexical"], strict=True)
        if h.question.evidence and x.frac(x.tap_cited) > h.frac(h.tap_cited)
    )
    return out


def print_lme(res: dict[str, Any]) -> None:
    print(f"\nLongMemEval_S ER@budget (%), {res['questions']} questions; scored = those with evidence")
    header = f"{'type':<27}{'n':>4}  " + COLUMNS
    print(header)
    print("-" * len(header))
    for t, h in res["hybrid"]["by_type"].items():
        x = res["lexical"]["by_type"][t]
        print(
            f"{t:<27}{h['n']:>4}  {h['er_frac']:>11.1f} {x['er_frac']:>12.1f} {x['er_frac'] - h['er_frac']:>+6.1f}"
            f"  {h['er_all']:>10.1f} {x['er_all']:>11.1f}"
        )
    lat = res["latency_ms"]
    print(
        f"answer in block (n={res['hybrid']['answer_in_block_n']}): hybrid {res['hybrid']['answer_in_block']} %, "
        f"lexical {res['lexical']['answer_in_block']} %; mean block tokens hybrid "
        f"{res['hybrid']['mean_block_tokens']}, lexical {res['lexical']['mean_block_tokens']}"
    )
    print(
        f"questions where lexical-only cites less / more evidence than hybrid: "
        f"{res['lexical_lost_vs_hybrid']} / {res['lexical_gained_vs_hybrid']}"
    )
    print(
        f"recall p50 (RecallResult.elapsed_ms, in process): hybrid cold {lat['hybrid_cold']} ms, "
        f"lexical {lat['lexical']} ms; reworded query on a loaded scope: hybrid {lat['hybrid_warm']} ms, "
        f"lexical {lat['lexical_warm']} ms"
    )
    if "hybrid_vs_bench_results_file" in res:
        c = res["hybrid_vs_bench_results_file"]
        print(
            f"hybrid vs bench/results/longmemeval.json per question: {len(c['questions_differing'])} of "
            f"{c['compared']} differ in cited evidence {c['questions_differing']}"
        )


# --- LoCoMo -----------------------------------------------------------------------------------


def run_locomo(root: Path, variants: list[str], budget: int) -> dict[str, Any]:
    conversations = locomo.load(locomo.DEFAULT_DATA)
    out: dict[str, Any] = {}
    for name in variants:
        toml = locomo.VARIANTS[name]
        run = locomo.VariantRun(name, toml)
        scores = {"hybrid": locomo.Scores(), "lexical": locomo.Scores()}
        warm_ms: dict[str, list[float]] = {"hybrid": [], "lexical": []}
        started = time.perf_counter()
        for conv in conversations:
            home = root / name / conv.sample_id
            saved = json.loads((home / locomo.MARKER).read_text())
            if saved["key"] != locomo.ingestion_key(run, conv):
                raise SystemExit(f"{home}: ingestion key differs from the {name} config + data")
            rt = open_runtime(LoadedConfig(config=parse_config(toml), path=None, data_dir=home))
            try:
                for q in conv.questions:
                    for mode, lexical_only in (("hybrid", False), ("lexical", True)):
                        t0 = time.perf_counter()
                        result = rt.recall.recall(
                            q.question, scope=locomo.SCOPE, budget_tokens=budget, lexical_only=lexical_only
                        )
                        wall = (time.perf_counter() - t0) * 1000
                        got = locomo.cited(r.memory for r in result.memories)
                        scores[mode].add(q, got, result.tokens, wall)  # the bench's own latency: wall ms
                        if q.category in locomo.SCORED:
                            warm = " ".join(reversed(q.question.split()))
                            warm_ms[mode].append(
                                rt.recall.recall(
                                    warm, scope=locomo.SCOPE, budget_tokens=budget, lexical_only=lexical_only
                                ).elapsed_ms
                            )
            finally:
                rt.close()
        log(f"LoCoMo {name}: {time.perf_counter() - started:.0f} s")
        out[name] = {mode: {**s.report(), "reworded_p50_ms": p50(warm_ms[mode])} for mode, s in scores.items()}
    return out


def print_locomo(res: dict[str, Any], budget: int) -> None:
    for name, modes in res.items():
        h, x = modes["hybrid"], modes["lexical"]
        print(f"\nLoCoMo ER@{budget} (%), variant {name}, n = {h['cats_1_4']['n']} questions in categories 1-4")
        header = f"{'category':<22}{'n':>5}  " + COLUMNS
        print(header)
        print("-" * len(header))
        groups = [("1-4 (headline)", h["cats_1_4"], x["cats_1_4"])]
        groups += [(k, v, x["by_category"][k]) for k, v in h["by_category"].items()]
        for label, a, b in groups:
            print(
                f"{label:<22}{a['n']:>5}  {a['er_frac']:>11.1f} {b['er_frac']:>12.1f} "
                f"{b['er_frac'] - a['er_frac']:>+6.1f}"
                f"  {a['er_all']:>10.1f} {b['er_all']:>11.1f}"
            )
        print(
            f"mean block tokens hybrid {h['mean_tokens']}, lexical {x['mean_tokens']}; recall p50 (wall, as the "
            f"bench): hybrid {h['recall_ms']['p50']} ms, lexical {x['recall_ms']['p50']} ms; reworded query "
            f"(elapsed_ms): hybrid {h['reworded_p50_ms']} ms, lexical {x['reworded_p50_ms']} ms"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--lme-home", type=Path, help="data dir kept by ./dev bench longmemeval --home")
    parser.add_argument("--locomo-home", type=Path, help="data dir kept by ./dev bench locomo --home")
    parser.add_argument("--lme-data", type=Path, default=lme.DEFAULT_DATA, help="the LongMemEval data it ingested")
    parser.add_argument("--budget", type=int, default=500)
    parser.add_argument("--skip-lme", action="store_true")
    parser.add_argument("--skip-locomo", action="store_true")
    parser.add_argument("--variants", default="default,no-episodes")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    if (not args.skip_lme and args.lme_home is None) or (not args.skip_locomo and args.locomo_home is None):
        parser.error("give --lme-home and --locomo-home (or skip one with --skip-lme / --skip-locomo)")
    os.environ.pop("TAP_HOME", None)  # the data dir is given explicitly below
    result: dict[str, Any] = {"benchmark": "lexical_only", "machine": benchutil.machine(), "budget": args.budget}
    with tempfile.TemporaryDirectory(prefix="tap-lexical-only-") as work:
        if not args.skip_lme:
            home = copy_store(args.lme_home, Path(work))
            result["longmemeval"] = run_lme(home, args.budget, args.lme_data)
            print_lme(result["longmemeval"])
        if not args.skip_locomo:
            root = copy_store(args.locomo_home, Path(work))
            variants = [v.strip() for v in args.variants.split(",") if v.strip()]
            result["locomo"] = run_locomo(root, variants, args.budget)
            print_locomo(result["locomo"], args.budget)
    print(f"\nwritten to {benchutil.write_result('lexical-only-recall', result, args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
