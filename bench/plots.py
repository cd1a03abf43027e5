"""The documentation's benchmark plots and tables, drawn from the result files in bench/results.

Run: ``./dev bench plots``. Writes
into docs/benchmarks/: three plots (``latency.svg``: recall latency by store size; ``quality.svg``:
evidence recall by data set against BM25; ``load.svg``: the proxy under concurrent streams) and one
markdown table per benchmark under ``tables/``, which the Benchmarks page includes. Every figure on
that page comes from here, so a rerun of a benchmark followed by this command updates the docs, and
tests/test_bench_plots.py fails when the committed files no longer match the results.

The SVGs are deterministic (fixed hash salt, no date, text kept as text), so an unchanged result
gives byte-identical files. Each current result file is read exactly once through ``Results``,
which also tells which files nothing reads (bench/results must hold no orphans).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
OUT = ROOT / "docs" / "benchmarks"
TAP, BM25, GREY = "#1f6f8b", "#d08c3a", "#9a9a9a"


class Results:
    """The current result files, read on demand; `unread()` names those nobody asked for."""

    def __init__(self, folder: Path = RESULTS) -> None:
        self.folder = folder
        self.read: set[str] = set()

    def __call__(self, name: str) -> Any:
        self.read.add(name)
        return json.loads((self.folder / f"{name}.json").read_text(encoding="utf-8"))

    def unread(self) -> list[str]:
        return sorted(p.stem for p in self.folder.glob("*.json") if p.stem not in self.read)


def table(headers: list[str], rows: list[list[object]], source: str) -> str:
    """A markdown table and the line naming its result file(s)."""
    lines = ["| " + " | ".join(headers) + " |", "|" + " --- |" * len(headers)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + f"\n\nFrom {source}.\n"


def ms(value: float) -> str:
    return f"{value:.1f} ms" if value < 100 else f"{value:.0f} ms"


def pct(share: float) -> str:
    return f"{100 * share:.1f} %"


def figure(width: float = 7.0, height: float = 3.4, columns: int = 1) -> tuple[Figure, Any]:
    fig, axes = plt.subplots(1, columns, figsize=(width, height), layout="constrained")
    return fig, axes


# --- recall latency by store size -----------------------------------------------------------


def latency(results: Results) -> tuple[Figure, str]:
    main, million, with_child = results("recall"), results("recall-1m"), results("recall-process-rss")
    points = [*main["points"], *million["points"]]
    sizes = [p["memories"] for p in points]
    fig, ax = figure()
    ax.plot(sizes, [p["end_to_end_ms"]["p50"] for p in points], "o-", color=TAP, label="recall p50")
    ax.plot(sizes, [p["end_to_end_ms"]["p99"] for p in points], "s--", color=TAP, alpha=0.6, label="recall p99")
    ax.plot(sizes, [p["embed_query_ms"]["p50"] for p in points], "^:", color=GREY, label="query embedding p50")
    ax.plot(sizes, [p["lexical_search_ms"]["p50"] for p in points], "v:", color=BM25, label="BM25 p50")
    ax.axhline(150, color="#b03030", linewidth=0.8, linestyle="-.", label="recall deadline (150 ms)")
    ax.set(xscale="log", yscale="log", xlabel="memories in the scope", ylabel="ms", title="Recall by store size")
    ax.legend(fontsize=8, loc="upper left")
    rss = {int(k): v["idle_rss_mb"] for k, v in main["serve"].items()}
    rss.update({int(k): v["idle_rss_mb"] for k, v in million["serve"].items() if int(k)})
    child = {int(k): v["idle_rss_mb"] for k, v in with_child["serve"].items() if int(k)}
    rows: list[list[object]] = []
    for p in points:
        size, disk = p["memories"], p["disk_mb"]
        idle = f"{rss[size]:,.0f} MB" if size in rss else "–"
        if size in child:
            idle += f"; {child[size]:.0f} MB with its recall process"
        rows.append(latency_row(f"{size:,}", p, f"{disk['chroma']:,.0f} + {disk['lexical']:,.0f} MB", idle))
    for p in main["chroma_server"]:
        rows.append(latency_row(f"{p['memories']:,} on a Chroma server", p, "(the server's)", "–"))
    headers = ["memories", "p50", "p99", "query embedding p50", "BM25 p50 / p99", "disk (Chroma + lexical)"]
    text = table(
        [*headers, "`tap serve` idle RSS"],
        rows,
        "`recall.json`, `recall-1m.json` (the 1M row) and `recall-process-rss.json`",
    )
    return fig, text


def latency_row(label: str, point: dict[str, Any], disk: str, idle: str) -> list[object]:
    """One row of the recall latency table."""
    lexical = point["lexical_search_ms"]
    return [
        label,
        ms(point["end_to_end_ms"]["p50"]),
        ms(point["end_to_end_ms"]["p99"]),
        ms(point["embed_query_ms"]["p50"]),
        f"{lexical['p50']:.1f} / {lexical['p99']:.1f} ms",
        disk,
        idle,
    ]


# --- quality by data set against BM25 -------------------------------------------------------


def quality(results: Results) -> tuple[Figure, str]:
    locomo, lme = results("locomo"), results("longmemeval")
    tap_cats = locomo["variants"]["default"]["tap"]["by_category"]
    bm25_cats = locomo["baselines"]["bm25_raw_turns"]["by_category"]
    types = [t for t in lme["by_type"] if t != "all"]
    fig, (left, right) = figure(9.0, 3.8, columns=2)
    bars(left, list(tap_cats), [tap_cats[c]["er_frac"] for c in tap_cats], [bm25_cats[c]["er_frac"] for c in tap_cats])
    asked = sum(tap_cats[c]["n"] for c in tap_cats)
    left.set(title=f"LoCoMo ({asked:,} questions)", ylabel="evidence recall (ER_frac, %)", ylim=(0, 118))
    tap_types = [lme["by_type"][t]["tap"]["er_frac"] for t in types]
    bars(right, types, tap_types, [lme["by_type"][t]["bm25"]["er_frac"] for t in types])
    right.set(title=f"LongMemEval_S ({lme['all']['with_evidence']} questions)", ylim=(0, 118))
    for ax in (left, right):
        ax.set_yticks(range(0, 101, 20))
    left.legend(fontsize=8, loc="upper left", ncols=2)
    return fig, quality_table(locomo, lme)


def bars(ax: Any, labels: list[str], tap: list[float], bm25: list[float]) -> None:
    spots = range(len(labels))
    ax.bar([s - 0.2 for s in spots], tap, 0.4, color=TAP, label="tap (default)")
    ax.bar([s + 0.2 for s in spots], bm25, 0.4, color=BM25, label="BM25 over the raw turns")
    ax.set_xticks(list(spots), [label.replace("single-session-", "single: ") for label in labels])
    ax.tick_params(axis="x", labelrotation=30, labelsize=8)


def quality_table(locomo: dict[str, Any], lme: dict[str, Any]) -> str:
    def cell(scores: dict[str, Any]) -> str:
        return f"{scores['er_frac']:.1f} / {scores['er_all']:.1f}"

    variants, bm25 = locomo["variants"], locomo["baselines"]["bm25_raw_turns"]
    controls = variants["default"]["controls"]
    rows: list[list[object]] = [
        ["LoCoMo, categories 1–4", cell(variants["default"]["tap"]["cats_1_4"]), cell(bm25["cats_1_4"])],
        [
            "LoCoMo, tap statements only (`store_episodes = false`)",
            cell(variants["no-episodes"]["tap"]["cats_1_4"]),
            "",
        ],
        ["LoCoMo, control: random memories", cell(controls["random_memories"]["cats_1_4"]), ""],
        ["LoCoMo, control: shuffled citations", cell(controls["shuffled_citations"]["cats_1_4"]), ""],
    ]
    rows += [
        [f"LongMemEval_S, {kind} (n = {lme['by_type'][kind]['with_evidence']})", cell(s["tap"]), cell(s["bm25"])]
        for kind, s in lme["by_type"].items()
        if kind != "all"
    ]
    everything = lme["all"]
    rows.append(
        [
            f"**LongMemEval_S, all** (n = {everything['with_evidence']})",
            cell(everything["tap"]),
            cell(everything["bm25"]),
        ]
    )
    return table(
        ["data set", "tap: ER_frac / ER_all", "BM25: ER_frac / ER_all"], rows, "`locomo.json` and `longmemeval.json`"
    )


def memory_quality(results: Results) -> str:
    data = results("quality")
    splits, targets = data["splits"], data["targets"]
    names = {
        "precision": "precision (stored statements that match a labelled memory)",
        "junk_rate": "junk rate",
        "recall": "recall of labelled memories",
        "duplicate_rate": "duplicates",
        "supersession_accuracy": "supersession accuracy (an update replaces what it updates)",
        "current_first": "current value ranked first for “… now?” questions",
        "superseded_in_blocks": "superseded memories in blocks",
        "current_top1": "current value is the block's first memory",
        "memories_per_100_turns": "memories written per 100 turns",
    }
    rows: list[list[object]] = []
    for key, name in names.items():
        values = [splits[split]["rates"][key] for split in ("all", "dev", "test")]
        shown = [f"{v:.2f}" if isinstance(v, float) else str(v) for v in values]
        rows.append([name, *shown, targets.get(key, "")])
    counts = splits["all"]["counts"]
    source = (
        f"`quality.json`: {counts['conversations']} conversations, {counts['turns']:,} turns, "
        f"{counts['labels']} labelled memories of which {counts['updates']} updates"
    )
    return table(["metric", "all", "dev", "test", "target"], rows, source)


def probes(results: Results) -> str:
    data = results("probes")
    keep = data["keep"]
    tentative = keep["tentative"]
    rows: list[list[object]] = [
        ["statements written with every tentative one kept", f"{keep['examples']} ({keep['positive']} worth a memory)"],
        ["AUC in cross-validation by conversation", f"{keep['cv_auc']:.2f}"],
        ["tentative statements", f"{tentative['tentative']} ({tentative['tentative_right']} worth a memory)"],
        [
            f"kept from a score of {keep['threshold']:.2f}",
            f"{tentative['kept']}, of which {tentative['kept_right']} worth a memory",
        ],
    ]
    source = f"`probes.json`: the keep probe trained on {data['conversations']} dev conversations"
    return table(["keep probe", "value"], rows, source)


# --- the proxy under load ---------------------------------------------------------------------


def load(results: Results) -> tuple[Figure, str]:
    data = results("load")
    levels = data["levels"]
    streams = [int(level) for level in levels]
    taps = [levels[str(s)]["tap"] for s in streams]
    fig, (left, right) = figure(9.0, 3.4, columns=2)
    left.plot(streams, [levels[str(s)]["added_ttfb_p50_ms"] for s in streams], "o-", color=TAP, label="added p50")
    left.plot(streams, [levels[str(s)]["added_ttfb_p99_ms"] for s in streams], "s--", color=TAP, label="added p99")
    left.axhline(150, color="#b03030", linewidth=0.8, linestyle="-.", label="recall deadline")
    left.set(xscale="log", xlabel="concurrent streams", ylabel="ms", title="Time to first byte added by tap")
    left.set_xticks(streams, [str(s) for s in streams])
    left.legend(fontsize=8, loc="upper left")
    shares = [100 * t["share_with_memories"] for t in taps]
    right.bar([str(s) for s in streams], shares, color=TAP, label="with memories")
    lexical = [100 * t["lexical_only_with_memories"] / t["requests"] for t in taps]
    right.bar([str(s) for s in streams], lexical, color=BM25, label="of which BM25 only")
    right.set(xlabel="concurrent streams", ylabel="% of requests", ylim=(0, 118), title="Requests with memories")
    right.set_yticks(range(0, 101, 20))
    right.legend(fontsize=8, loc="upper left", ncols=2)
    runs = {str(s): levels[str(s)] for s in streams}
    runs.update({f"{wave} at once, x3": run for wave, run in data["bursts"].items()})
    rows = [load_row(name, run) for name, run in runs.items()]
    headers = ["streams", "with memories", "BM25 only", "added TTFB p50", "added TTFB p99", "CPU per request", "errors"]
    return fig, table(headers, rows, "`load.json`")


def load_row(name: str, run: dict[str, Any]) -> list[object]:
    """One row of the load table: a level of closed-loop streams, or a wave of requests at once."""
    tap = run["tap"]
    return [
        name,
        pct(tap["share_with_memories"]),
        tap["lexical_only_with_memories"],
        ms(run["added_ttfb_p50_ms"]),
        ms(run["added_ttfb_p99_ms"]),
        ms(tap["server_cpu_ms_per_request"]),
        tap["errors"],
    ]


# --- the other benchmarks, one table each -----------------------------------------------------


def pairs(data: dict[str, Any], baseline: str, columns: list[str], source: str) -> str:
    """An A/B table: each request kind's baseline, through tap, and what tap added (p50 and p99)."""
    kinds = {"non-streaming": data["non_streaming"]["latency"], "streaming, first byte": data["streaming"]["ttfb"]}
    rows: list[list[object]] = [
        [f"{kind} {q}", *(ms(times[f"{side}_{q}_ms"]) for side in (baseline, "tap", "added"))]
        for kind, times in kinds.items()
        for q in ("p50", "p99")
    ]
    return table(["", *columns, "added"], rows, source)


def proxy(results: Results) -> str:
    source = "`proxy.json` (10,000 memories, A/B pairs)"
    return pairs(results("proxy"), "direct", ["direct", "through tap"], source)


def mitm(results: Results) -> str:
    return pairs(results("mitm"), "baseline", ["mitmproxy, no addon", "tap's addon"], "`mitm.json`")


def throughput(results: Results) -> str:
    ingest, stream, embed = results("ingest"), results("ingest-stream"), results("embed")
    rows: list[list[object]] = [
        [
            "`tap ingest` of a 100,000-line Claude Code tree",
            f"{ingest['turns_per_s']:.1f} turns/s "
            f"({ingest['turns']:,} turns in {ingest['seconds']['end_to_end']:.0f} s)",
            f"{ingest['peak_rss_mb']:.0f} MB peak",
            "`ingest.json`",
        ],
        [
            "one 1 GB session file through the log tailer",
            f"{stream['mb_per_s']:.1f} MB/s",
            f"+{stream['peak_rss_mb'] - stream['rss_before_mb']:.0f} MB",
            "`ingest-stream.json`",
        ],
        [
            "embedding (int8 MiniLM, both cores)",
            f"{embed['batch_sentences_per_s']['512']:.0f} sentences/s; a query {ms(embed['query_ms']['p50'])} p50",
            f"{embed['rss_mb']['after']:.0f} MB",
            "`embed.json`",
        ],
    ]
    return table(["what", "speed", "memory", "file"], rows, "the files named in each row")


def everyday(results: Results) -> str:
    cli, hooks = results("cli"), results("hooks")
    rows: list[list[object]] = []
    for command in ("tap --help", "tap status", "tap memories list", "tap recall TEXT", "tap env", "tap mitm ca"):
        rows.append(
            [
                f"`{command}`",
                f"{cli['with_server'][command]['median_s']:.2f} s",
                f"{cli['without_server'][command]['median_s']:.2f} s",
            ]
        )
    rows.append(
        [
            "agent hook, UserPromptSubmit (command hook)",
            ms(hooks["command_hook"]["wall_ms"]["p50"]),
            ms(hooks["embedded_no_server"]["wall_ms"]["p50"]),
        ]
    )
    rows.append(["agent hook, UserPromptSubmit (http hook)", ms(hooks["http_hook"]["request_ms"]["p50"]), "–"])
    return table(["command (median / p50)", "with `tap serve` running", "without"], rows, "`cli.json` and `hooks.json`")


def mcp(results: Results) -> str:
    data = results("mcp")
    local, http, floor = data["in_process"], data["http"], data["python_floor"]["wall_ms"]
    rows: list[list[object]] = [
        ["`search_memories` over `/mcp` of `tap serve`", ms(http["search_ms"]["p50"]), ms(http["search_ms"]["p95"])],
        [
            "`tools/list` over `/mcp` (the protocol's own cost)",
            ms(http["list_tools_ms"]["p50"]),
            ms(http["list_tools_ms"]["p95"]),
        ],
        ["`search_memories` server-side: the tool's work", ms(local["tool_ms"]["p50"]), ms(local["tool_ms"]["p95"])],
        ["the search alone, in process", ms(local["search_ms"]["p50"]), ms(local["search_ms"]["p95"])],
        [
            "`tap mcp` start-up, `tap serve` running",
            ms(data["stdio_with_server"]["start_ms"]["p50"]),
            ms(data["stdio_with_server"]["start_ms"]["p95"]),
        ],
        [
            "`tap mcp` start-up, no server",
            ms(data["stdio_without_server"]["start_ms"]["p50"]),
            ms(data["stdio_without_server"]["start_ms"]["p95"]),
        ],
        ["`python -c pass` (the floor)", ms(floor["p50"]), ms(floor["p95"])],
    ]
    return table(["what (10,000 memories in the scope)", "p50", "p95"], rows, "`mcp.json`")


def background(results: Results) -> str:
    stall, contention, lexical = results("write_stall"), results("recall-contention"), results("lexical-only-recall")
    consolidate, fuzz, soak = results("consolidate"), results("fuzz"), results("soak")
    writes = stall["writes"]
    large = contention["results"]
    before, after = consolidate["arms"]["before"], consolidate["arms"]["after"]
    lme = lexical["longmemeval"]
    rows: list[list[object]] = [
        [
            "event loop stopped by 2,000 recall counts: one write → paced",
            f"{writes['access_flush_2000_one_write']['longest_pause_ms']:.0f} → "
            f"{writes['access_flush_2000_paced']['longest_pause_ms']:.0f} ms",
            "`write_stall.json`",
        ],
        [
            "recall p50 at 10,000 memories, idle → another thread busy",
            f"{large['large/full']['idle']['wall_ms']['p50']:.1f} → "
            f"{large['large/full']['busy']['wall_ms']['p50']:.1f} ms",
            "`recall-contention.json`",
        ],
        [
            "BM25-only recall (the overload fallback) on LongMemEval: ER_frac, latency",
            f"{lme['lexical']['by_type']['all']['er_frac']:.1f} % in {ms(lme['latency_ms']['lexical'])} "
            f"(full: {lme['hybrid']['by_type']['all']['er_frac']:.1f} % in {ms(lme['latency_ms']['hybrid_cold'])})",
            "`lexical-only-recall.json`",
        ],
        [
            "six months of chat, one consolidation: near-duplicates left",
            f"{before['near_duplicates_left']} → {after['near_duplicates_left']} "
            f"(precision {before['quality']['precision']:.2f} → {after['quality']['precision']:.2f})",
            "`consolidate.json`",
        ],
        [
            "malformed requests across every route: 5xx answers",
            f"{fuzz['server_errors_5xx']} of {fuzz['cases']:,}",
            "`fuzz.json`",
        ],
        [
            f"{soak['minutes']:.0f} minutes of mixed traffic, {soak['big_body_mb']} MB bodies, client aborts, "
            "a full disk: acknowledged turns lost, RSS end / start",
            f"{soak['acknowledged_turns_lost']} of {soak['acknowledged_turns']:,}, "
            f"{soak['rss_mb']['end']:.0f} / {soak['rss_mb']['start']:.0f} MB ({soak['rss_mb']['end_over_start']:.2f}x)",
            "`soak.json`",
        ],
    ]
    return table(["what", "result", "file"], rows, "the files named in each row")


FIGURES: dict[str, Callable[[Results], tuple[Figure, str]]] = {"latency": latency, "quality": quality, "load": load}
TABLES: dict[str, Callable[[Results], str]] = {
    "memory-quality": memory_quality,
    "probes": probes,
    "proxy": proxy,
    "mitm": mitm,
    "throughput": throughput,
    "everyday": everyday,
    "mcp": mcp,
    "background": background,
}


def render(out: Path, results: Results | None = None) -> list[Path]:
    """Write every plot and table into `out`; returns the files written."""
    results = results or Results()
    plt.rcParams.update({"svg.hashsalt": "tap", "svg.fonttype": "none", "font.size": 9})
    (out / "tables").mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for name, draw in FIGURES.items():
        fig, text = draw(results)
        path = out / f"{name}.svg"
        fig.savefig(path, format="svg", metadata={"Date": None, "Creator": "bench/plots.py"})
        plt.close(fig)
        written += [path, write(out / "tables" / f"{name}.md", text)]
    for name, make in TABLES.items():
        written.append(write(out / "tables" / f"{name}.md", make(results)))
    return written


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="Folder to write into (default: docs/benchmarks).")
    args = parser.parse_args()
    results = Results()
    for path in render(args.out, results):
        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
    if results.unread():
        sys.exit(f"bench/results holds files no plot or table reads: {', '.join(results.unread())}")


if __name__ == "__main__":
    main()
