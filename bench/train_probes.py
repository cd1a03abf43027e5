"""Train the linear probes tap ships (tap/language/probes.py) on the quality set's dev split.

Run: ``./dev bench train_probes [--data DIR ...] [--out PATH] [--check]``. Writes
``tap/language/probes.json`` (the weights, for the embedder they were trained with) and
``bench/results/probes.json`` (what they were trained on and how well they did in cross-validation).

Data: every dev conversation of the quality set (``bench/quality/conversations``, ``"split": "dev"``;
more folders with ``--data``); the test split is never read. Each conversation goes through tap as
in bench/quality.py, with every tentative statement kept (``Extraction.keep_all_tentative``); each
statement written is labelled by the quality matcher:

- keep: the statement states one of the conversation's labels (positive) or none (negative);
- change: the statement states an update label, one that replaces an older one (positive), or a
  label that replaces nothing (negative); the labels' own statements are added as examples too;
- link: every (newer, older) pair of one person's statements: the newer states a label that
  replaces (down a chain) a label the older states. A newer statement replaces its best-scoring
  older one when the change probe says it reports a change and the link score reaches the
  threshold chosen for ``LINK_PRECISION``; it joins the older one's line from the score chosen for
  ``TOPIC_PRECISION``.

Each probe is an L2-regularised logistic regression over the statement's vector (Newton's method,
numpy). Its threshold is chosen by cross-validation grouped by conversation (a conversation's
statements never score themselves): for keep, the lowest score at which the tentative statements
kept are at least ``KEEP_PRECISION`` right; for change, the best F1. ``--check`` retrains and fails
when the shipped file differs (the same data and code give the same weights).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import benchutil
import numpy as np
import numpy.typing as npt
import quality

from tap.config import LoadedConfig, parse_config
from tap.extract.reconcile import same_holder
from tap.language.probes import LINK_FEATURES, PROBES_FILE, link_features
from tap.language.rules.extractor import TENTATIVE
from tap.records import Memory
from tap.wiring.runtime import open_runtime

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "tap" / "language" / PROBES_FILE
L2 = 1.0
FOLDS = 5
KEEP_PRECISION = 0.75
LINK_PRECISION = 0.7
TOPIC_PRECISION = 0.5
SEED = 2026
Vector = npt.NDArray[np.float64]


@dataclass
class Example:
    """One statement's vector and answer, and the conversation it came from (the CV group)."""

    vector: list[float]
    answer: bool
    group: str
    tentative: bool = False


def statements(conv: quality.Conversation) -> tuple[list[Memory], dict[str, list[float]], list[list[float]]]:
    """Every statement tap writes for the conversation with all tentative ones kept, their vectors,
    and the vectors of the labels' own statements."""
    with tempfile.TemporaryDirectory(prefix="tap-probes-") as home:
        rt = open_runtime(LoadedConfig(config=parse_config(""), path=None, data_dir=Path(home)))
        try:
            rt.worker.extraction.keep_all_tentative = True
            quality.feed(rt, conv, 0.0)
            memories = [m for m in rt.store.iter_memories(scope=conv.scope) if m.kind != "episode"]
            vectors = rt.store.get_vectors([m.id for m in memories])
            labels = rt.embedder.embed_documents([label.statement for label in conv.labels])
        finally:
            rt.close()
    return memories, vectors, labels


def examples(
    conversations: Sequence[quality.Conversation],
) -> tuple[list[Example], list[Example], list[Pair], dict[str, list[float]]]:
    """The keep examples, the change examples and the pairs of these conversations, and the
    statements' vectors by id."""
    keep: list[Example] = []
    change: list[Example] = []
    linked: list[Pair] = []
    by_id: dict[str, list[float]] = {}
    with benchutil.Bar("conversations", total=len(conversations)) as bar:
        for conv in conversations:
            memories, vectors, label_vectors = statements(conv)
            matchers = [quality.Matcher(label) for label in conv.labels]
            for memory in memories:
                vector = vectors.get(memory.id)
                if vector is None:
                    continue
                matched = [m.label for m in matchers if m.matches(memory)]
                tentative = TENTATIVE in memory.tags
                keep.append(Example(vector, bool(matched), conv.id, tentative))
                if matched:
                    change.append(Example(vector, any(label.supersedes for label in matched), conv.id))
            for label, vector in zip(conv.labels, label_vectors, strict=True):
                change.append(Example(vector, bool(label.supersedes), conv.id))
            linked += pairs(conv, memories, vectors)
            by_id.update(vectors)
            bar.advance()
    return keep, change, linked, by_id


def link_data(linked: Sequence[Pair], change_scores: dict[str, float]) -> tuple[Vector, Vector]:
    x = np.array(
        [
            link_features(
                newer=p.newer_text,
                older=p.older_text,
                cosine=p.cosine,
                days_apart=p.days_apart,
                change=change_scores[p.newer],
            )
            for p in linked
        ]
    )
    return x, np.array([p.answer for p in linked], dtype=float)


def link_threshold(
    linked: Sequence[Pair], cv: Vector, precision: float, reports_change: set[str] | None = None
) -> tuple[float, dict[str, int]]:
    """The lowest score at which the best-scoring older statement of each newer one, taken as what
    it updates, is right `precision` of the time (of the newer ones in `reports_change`, if given)."""
    best: dict[str, tuple[float, bool]] = {}
    for pair, score in zip(linked, cv, strict=True):
        if pair.newer not in best or score > best[pair.newer][0]:
            best[pair.newer] = (float(score), pair.answer)
    chosen = sorted(
        (v for k, v in best.items() if reports_change is None or k in reports_change), key=lambda item: -item[0]
    )
    threshold, right = 1.0, 0
    for taken, (score, answer) in enumerate(chosen, 1):
        right += answer
        if right / taken >= precision:
            threshold = score
    found = [a for s, a in chosen if s >= threshold]
    return threshold, {"updates": int(sum(p.answer for p in linked)), "linked": len(found), "linked_right": sum(found)}


@dataclass
class Pair:
    """A newer statement and an older one of the same person, and whether the newer updates it."""

    newer: str
    older: str
    newer_text: str
    older_text: str
    cosine: float
    days_apart: float
    answer: bool
    group: str


def pairs(conv: quality.Conversation, memories: Sequence[Memory], vectors: dict[str, list[float]]) -> list[Pair]:
    """Every (newer, older) pair of the conversation's statements that the link probe may be asked
    about (tap.extract.reconcile._linked: the same holder, other turns, the older one no
    instruction and no event), answered by the labels: the newer states a label that replaces one the older states."""
    matchers = [quality.Matcher(label) for label in conv.labels]
    states = {m.id: [x.label for x in matchers if x.matches(m)] for m in memories}
    replaces = _replaced(conv)
    ordered = sorted((m for m in memories if m.id in vectors), key=lambda m: m.valid_from)
    out: list[Pair] = []
    for index, newer in enumerate(ordered):
        replaced = {old for label in states[newer.id] for old in replaces[label.id]}
        stated = {label.id for label in states[newer.id]}
        for older in ordered[:index]:
            if older.kind in ("instruction", "event") or set(older.sources) & set(newer.sources):
                continue
            if stated & {label.id for label in states[older.id]}:
                continue  # the same fact said again: neither an update nor unrelated
            if not same_holder(newer.holder, newer.content, older):
                continue
            out.append(
                Pair(
                    newer=newer.id,
                    older=older.id,
                    newer_text=newer.content,
                    older_text=older.content,
                    cosine=float(np.dot(vectors[newer.id], vectors[older.id])),
                    days_apart=(newer.valid_from - older.valid_from) / 86400,
                    answer=any(label.id in replaced for label in states[older.id]),
                    group=conv.id,
                )
            )
    return out


def _replaced(conv: quality.Conversation) -> dict[str, set[str]]:
    """Every label a label replaces, directly or down a chain (Jekyll → Hugo → Astro: Astro
    replaces both)."""
    direct = {label.id: set(label.supersedes) for label in conv.labels}
    closed: dict[str, set[str]] = {}
    for label in conv.labels:
        seen: set[str] = set()
        todo = list(direct[label.id])
        while todo:
            old = todo.pop()
            if old not in seen:
                seen.add(old)
                todo += direct.get(old, set())
        closed[label.id] = seen
    return closed


def fit(x: Vector, y: Vector, l2: float = L2) -> Vector:
    """Weights (bias last) of an L2-regularised logistic regression, by Newton's method."""
    xb = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(xb.shape[1])
    penalty = np.full(xb.shape[1], l2)
    penalty[-1] = 0.0
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(xb @ w)))
        gradient = xb.T @ (p - y) + penalty * w
        hessian = (xb * (p * (1.0 - p))[:, None]).T @ xb + np.diag(penalty + 1e-9)
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


def scores(w: Vector, x: Vector) -> Vector:
    return 1.0 / (1.0 + np.exp(-(np.hstack([x, np.ones((len(x), 1))]) @ w)))


def cross_validated(data: Sequence[Example]) -> Vector:
    """Each example's score from a model trained without its conversation."""
    groups = sorted({e.group for e in data})
    np.random.default_rng(SEED).shuffle(groups)
    x = np.array([e.vector for e in data])
    y = np.array([e.answer for e in data], dtype=float)
    out = np.zeros(len(data))
    for fold in range(FOLDS):
        held = {g for i, g in enumerate(groups) if i % FOLDS == fold}
        test = np.array([e.group in held for e in data])
        out[test] = scores(fit(x[~test], y[~test]), x[test])
    return out


def auc(y: Vector, s: Vector) -> float:
    order = np.argsort(s, kind="stable")
    ranks = np.empty(len(s))
    ranks[order] = np.arange(1, len(s) + 1)
    positive = y == 1
    n1, n0 = int(positive.sum()), int((~positive).sum())
    return float((ranks[positive].sum() - n1 * (n1 + 1) / 2) / (n1 * n0)) if n1 and n0 else float("nan")


def keep_threshold(data: Sequence[Example], cv: Vector) -> tuple[float, dict[str, float]]:
    """The lowest score at which the tentative statements kept are KEEP_PRECISION right."""
    tentative = [(s, e.answer) for s, e in zip(cv, data, strict=True) if e.tentative]
    tentative.sort(key=lambda pair: -pair[0])
    best = 1.0
    right = 0
    for kept, (score, answer) in enumerate(tentative, 1):
        right += answer
        if right / kept >= KEEP_PRECISION:
            best = score
    kept_right = [a for s, a in tentative if s >= best]
    return best, {
        "tentative": len(tentative),
        "tentative_right": sum(a for _, a in tentative),
        "kept": len(kept_right),
        "kept_right": sum(kept_right),
    }


def f1_threshold(data: Sequence[Example], cv: Vector) -> float:
    """The score with the best F1 in cross-validation."""
    y = np.array([e.answer for e in data])
    best, best_f1 = 0.5, -1.0
    for t in np.unique(np.round(cv, 3)):
        chosen = cv >= t
        tp = int((chosen & y).sum())
        f1 = 2 * tp / (int(chosen.sum()) + int(y.sum())) if tp else 0.0
        if f1 > best_f1:
            best, best_f1 = float(t), f1
    return best


def probe(data: Sequence[Example], threshold: float) -> dict[str, Any]:
    w = fit(np.array([e.vector for e in data]), np.array([e.answer for e in data], dtype=float))
    return {"weights": [round(float(v), 6) for v in w[:-1]], "bias": round(float(w[-1]), 6), "threshold": threshold}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", type=Path, action="append", default=[], help="more folders of dev conversations")
    parser.add_argument("--out", type=Path, default=SHIPPED, help="where to write the weights")
    parser.add_argument("--check", action="store_true", help="fail when the shipped weights differ from a retrain")
    args = parser.parse_args(argv)
    conversations = [c for folder in [quality.DATA_DIR, *args.data] for c in quality.load(folder) if c.split == "dev"]
    keep, change, linked, vectors = examples(conversations)
    keep_cv, change_cv = cross_validated(keep), cross_validated(change)
    threshold, tentative = keep_threshold(keep, keep_cv)
    change_threshold = round(f1_threshold(change, change_cv), 3)
    change_probe = probe(change, change_threshold)
    change_w = np.array([*change_probe["weights"], change_probe["bias"]])
    # the link probe learns from the change probe's scores as the runtime will see them: of the
    # shipped change probe for the fit, cross-validated (by conversation) for the threshold
    newer = sorted({p.newer for p in linked})
    shipped_change = dict(zip(newer, scores(change_w, np.array([vectors[i] for i in newer])), strict=True))
    link_x, link_y = link_data(linked, {k: float(v) for k, v in shipped_change.items()})
    link_cv = cross_validated(
        [Example(list(x), bool(y), p.group) for x, y, p in zip(link_x, link_y, linked, strict=True)]
    )
    changed = {k for k, v in shipped_change.items() if v >= change_threshold}
    link_t, link_found = link_threshold(linked, link_cv, LINK_PRECISION, changed)
    topic_t, topic_found = link_threshold(linked, link_cv, TOPIC_PRECISION)
    link_w = fit(link_x, link_y)
    with tempfile.TemporaryDirectory() as home:
        rt = open_runtime(LoadedConfig(config=parse_config(""), path=None, data_dir=Path(home)))
        embedder, width = rt.embedder.model_id, rt.embedder.dimensions
        rt.close()
    shipped = {
        "embedder": embedder,
        "trained_on": f"{len(conversations)} dev conversations of the quality set (bench/train_probes.py)",
        "keep": probe(keep, round(threshold, 3)),
        "change": change_probe,
        "link": {
            "features": list(LINK_FEATURES),
            "weights": [round(float(v), 6) for v in link_w[:-1]],
            "bias": round(float(link_w[-1]), 6),
            "threshold": round(link_t, 3),
            "topic_threshold": round(min(topic_t, link_t), 3),
        },
    }
    assert all(len(shipped[p]["weights"]) == width for p in ("keep", "change"))
    text = json.dumps(shipped, indent=1) + "\n"
    if args.check:
        same = args.out.read_text(encoding="utf-8") == text if args.out.exists() else False
        print("probes are current" if same else f"{args.out} differs from a retrain: run ./dev bench train_probes")
        return 0 if same else 1
    args.out.write_text(text, encoding="utf-8")
    y_keep = np.array([e.answer for e in keep], dtype=float)
    y_change = np.array([e.answer for e in change], dtype=float)
    result = {
        "benchmark": "probes",
        "machine": benchutil.machine(),
        "conversations": len(conversations),
        "keep": {
            "examples": len(keep),
            "positive": int(y_keep.sum()),
            "cv_auc": round(auc(y_keep, keep_cv), 3),
            "threshold": round(threshold, 3),
            "tentative": tentative,
        },
        "change": {
            "examples": len(change),
            "positive": int(y_change.sum()),
            "cv_auc": round(auc(y_change, change_cv), 3),
            "threshold": change_threshold,
        },
        "link": {
            "pairs": len(linked),
            "positive": int(link_y.sum()),
            "cv_auc": round(auc(link_y, link_cv), 3),
            "threshold": round(link_t, 3),
            "chosen": link_found,
            "topic_threshold": round(min(topic_t, link_t), 3),
            "lines": topic_found,
        },
    }
    path = benchutil.write_result("probes", result)
    print(json.dumps({k: v for k, v in result.items() if k != "machine"}, indent=1))
    print(f"weights written to {args.out}; result to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
