"""Train the keep probe tap ships (tap/language/probes.py) on the quality set's dev split.

Run: ``./dev bench train_probes [--data DIR ...] [--out PATH] [--check]``. Writes
``tap/language/probes.json`` (the weights, for the embedder they were trained with) and
``bench/results/probes.json`` (what it was trained on and how well it did in cross-validation).

Data: every dev conversation of the quality set (``bench/quality/conversations``, ``"split": "dev"``;
more folders with ``--data``); the test split is never read. Each conversation goes through tap as
in bench/quality.py, with every tentative statement written (``Extraction.keep_all_tentative``);
each statement written is labelled by the quality matcher: it states one of the conversation's
labels (worth a memory) or none.

The probe is an L2-regularised logistic regression over the statement's vector (Newton's method,
numpy). Its threshold is chosen by cross-validation grouped by conversation (a conversation's
statements are never scored by a model that saw them): the lowest score at which the tentative
statements kept are at least ``KEEP_PRECISION`` right, as the median over ``SEEDS`` ways of
dealing the conversations into folds (one dealing alone moves it by a few hundredths: more than a
small change to the extractor does). ``--check`` retrains and fails when the
shipped file differs (the same data and code give the same weights).
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
from tap.language.probes import PROBES_FILE
from tap.language.rules.extractor import TENTATIVE
from tap.wiring.runtime import open_runtime

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "tap" / "language" / PROBES_FILE
L2 = 1.0
FOLDS = 5
KEEP_PRECISION = 0.75
SEEDS = tuple(range(2026, 2035))
Vector = npt.NDArray[np.float64]


@dataclass
class Example:
    """One statement's vector and answer, and the conversation it came from (the CV group)."""

    vector: list[float]
    answer: bool
    group: str
    tentative: bool


def examples(conversations: Sequence[quality.Conversation]) -> tuple[list[Example], str, int]:
    """Every statement tap writes for these conversations (tentative ones included), answered by
    the labels; and the embedder's model id and width."""
    found: list[Example] = []
    embedder, width = "", 0
    with benchutil.Bar("conversations", total=len(conversations)) as bar:
        for conv in conversations:
            with tempfile.TemporaryDirectory(prefix="tap-probes-") as home:
                rt = open_runtime(LoadedConfig(config=parse_config(""), path=None, data_dir=Path(home)))
                try:
                    embedder, width = rt.embedder.model_id, rt.embedder.dimensions
                    rt.worker.extraction.keep_all_tentative = True
                    quality.feed(rt, conv, 0.0)
                    memories = [m for m in rt.store.iter_memories(scope=conv.scope) if m.kind != "episode"]
                    vectors = rt.store.get_vectors([m.id for m in memories])
                finally:
                    rt.close()
            matchers = [quality.Matcher(label) for label in conv.labels]
            for memory in memories:
                if memory.id in vectors:
                    right = any(m.matches(memory) for m in matchers)
                    found.append(Example(vectors[memory.id], right, conv.id, TENTATIVE in memory.tags))
            bar.advance()
    return found, embedder, width


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


def cross_validated(data: Sequence[Example], seed: int) -> Vector:
    """Each example's score from a model trained without its conversation (the conversations dealt
    into folds by `seed`)."""
    groups = sorted({e.group for e in data})
    np.random.default_rng(seed).shuffle(groups)
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


def keep_threshold(data: Sequence[Example], cv: Vector) -> float:
    """The lowest score at which the tentative statements kept are KEEP_PRECISION right."""
    best, right = 1.0, 0
    for kept, (score, answer) in enumerate(_tentative(data, cv), 1):
        right += answer
        if right / kept >= KEEP_PRECISION:
            best = score
    return best


def _tentative(data: Sequence[Example], cv: Vector) -> list[tuple[float, int]]:
    """The tentative statements' (score, answer), best score first."""
    return sorted(((float(s), e.answer) for s, e in zip(cv, data, strict=True) if e.tentative), key=lambda p: -p[0])


def kept_at(data: Sequence[Example], cv: Vector, threshold: float) -> dict[str, int]:
    """How many tentative statements there are, how many are right, and how many of each are kept."""
    tentative = _tentative(data, cv)
    kept_right = [a for s, a in tentative if s >= threshold]
    return {
        "tentative": len(tentative),
        "tentative_right": sum(a for _, a in tentative),
        "kept": len(kept_right),
        "kept_right": sum(kept_right),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", type=Path, action="append", default=[], help="more folders of dev conversations")
    parser.add_argument("--out", type=Path, default=SHIPPED, help="where to write the weights")
    parser.add_argument("--check", action="store_true", help="fail when the shipped weights differ from a retrain")
    args = parser.parse_args(argv)
    conversations = [c for folder in [quality.DATA_DIR, *args.data] for c in quality.load(folder) if c.split == "dev"]
    data, embedder, width = examples(conversations)
    dealt = [cross_validated(data, seed) for seed in SEEDS]
    thresholds = [keep_threshold(data, cv) for cv in dealt]
    threshold = float(np.median(thresholds))
    w = fit(np.array([e.vector for e in data]), np.array([e.answer for e in data], dtype=float))
    keep: dict[str, Any] = {
        "weights": [round(float(v), 6) for v in w[:-1]],
        "bias": round(float(w[-1]), 6),
        "threshold": round(threshold, 3),
    }
    assert len(keep["weights"]) == width
    shipped = {
        "embedder": embedder,
        "trained_on": f"{len(conversations)} dev conversations of the quality set (bench/train_probes.py)",
        "keep": keep,
    }
    text = json.dumps(shipped, indent=1) + "\n"
    if args.check:
        same = args.out.exists() and args.out.read_text(encoding="utf-8") == text
        print("probes are current" if same else f"{args.out} differs from a retrain: run ./dev bench train_probes")
        return 0 if same else 1
    args.out.write_text(text, encoding="utf-8")
    y = np.array([e.answer for e in data], dtype=float)
    result = {
        "benchmark": "probes",
        "machine": benchutil.machine(),
        "conversations": len(conversations),
        "keep": {
            "examples": len(data),
            "positive": int(y.sum()),
            "cv_auc": round(float(np.mean([auc(y, cv) for cv in dealt])), 3),
            "threshold": round(threshold, 3),
            "thresholds_by_dealing": [round(t, 3) for t in thresholds],
            "tentative": kept_at(data, dealt[0], threshold),
        },
    }
    path = benchutil.write_result("probes", result)
    print(json.dumps({k: v for k, v in result.items() if k != "machine"}, indent=1))
    print(f"weights written to {args.out}; result to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
