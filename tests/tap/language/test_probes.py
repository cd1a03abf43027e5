"""The keep probe tap ships: it loads for the embedder it was trained on (and only for it) and
scores as a logistic regression."""

from __future__ import annotations

import json
import math
from importlib import resources

import pytest

from store.onnx_embedder import MODEL_ID
from tap.language.probes import Probe, load_probes, parse_probes

WIDTH = 384


def test_the_shipped_probe_loads_for_the_default_embedder() -> None:
    shipped = load_probes(MODEL_ID, WIDTH)
    assert shipped is not None
    assert len(shipped.keep.weights) == WIDTH and 0.0 < shipped.keep.threshold < 1.0


@pytest.mark.parametrize(("embedder", "width"), [("nomic-embed-text", 768), (MODEL_ID, 768), ("other", WIDTH)])
def test_no_probes_for_another_embedder_or_width(embedder: str, width: int) -> None:
    assert load_probes(embedder, width) is None


def test_a_probes_file_of_another_width_gives_no_probes() -> None:
    raw = json.loads(resources.files("tap.language").joinpath("probes.json").read_text(encoding="utf-8"))
    assert parse_probes(raw, MODEL_ID, WIDTH) is not None
    shorter = json.loads(json.dumps(raw))
    shorter["keep"]["weights"] = shorter["keep"]["weights"][:-1]
    assert parse_probes(shorter, MODEL_ID, WIDTH) is None
    assert parse_probes({k: v for k, v in raw.items() if k != "keep"}, MODEL_ID, WIDTH) is None


def test_a_probe_is_a_logistic_regression() -> None:
    probe = Probe(weights=(2.0, -1.0), bias=0.5, threshold=0.7)
    assert probe.score([1.0, 1.0]) == pytest.approx(1 / (1 + math.exp(-1.5)))
    assert probe.says_yes([1.0, 0.0]) and not probe.says_yes([0.0, 1.0])
    assert probe.score([1e6, 0.0]) == pytest.approx(1.0)  # no overflow
