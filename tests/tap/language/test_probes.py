"""The linear probes tap ships: they load for the embedder they were trained on (and only for it),
score as logistic regressions, and the link features read what they say they read."""

from __future__ import annotations

import json
import math
from importlib import resources

import pytest

from store.onnx_embedder import MODEL_ID
from tap.language.probes import (
    LINK_FEATURES,
    Probe,
    distinctive_words,
    link_features,
    load_probes,
    numbers,
    parse_probes,
)

WIDTH = 384


def test_the_shipped_probes_load_for_the_default_embedder() -> None:
    shipped = load_probes(MODEL_ID, WIDTH)
    assert shipped is not None
    for probe in (shipped.keep, shipped.change):
        assert len(probe.weights) == WIDTH and 0.0 < probe.threshold < 1.0
    assert len(shipped.link.weights) == len(LINK_FEATURES)
    assert 0.0 < shipped.topic_threshold <= shipped.link.threshold < 1.0


@pytest.mark.parametrize(("embedder", "width"), [("nomic-embed-text", 768), (MODEL_ID, 768), ("other", WIDTH)])
def test_no_probes_for_another_embedder_or_width(embedder: str, width: int) -> None:
    assert load_probes(embedder, width) is None


def test_a_probes_file_of_another_width_or_feature_set_gives_no_probes() -> None:
    raw = json.loads(resources.files("tap.language").joinpath("probes.json").read_text(encoding="utf-8"))
    assert parse_probes(raw, MODEL_ID, WIDTH) is not None
    fewer = json.loads(json.dumps(raw))
    fewer["link"]["weights"] = fewer["link"]["weights"][:-1]
    assert parse_probes(fewer, MODEL_ID, WIDTH) is None
    assert parse_probes({k: v for k, v in raw.items() if k != "change"}, MODEL_ID, WIDTH) is None
    assert parse_probes(raw, MODEL_ID, WIDTH - 1) is None


def test_a_probe_is_a_logistic_regression() -> None:
    probe = Probe(weights=(2.0, -1.0), bias=0.5, threshold=0.7)
    assert probe.score([1.0, 1.0]) == pytest.approx(1 / (1 + math.exp(-1.5)))
    assert probe.says_yes([1.0, 0.0]) and not probe.says_yes([0.0, 1.0])
    assert probe.score([1e6, 0.0]) == pytest.approx(1.0)  # no overflow


def test_distinctive_words_leave_out_the_user() -> None:
    assert distinctive_words("The user's rating went up to 1912") == {"rating", "went", "1912"}


def test_numbers_leave_out_the_dates_tap_adds() -> None:
    assert numbers("The user pays £875 a month (from June 2025)") == {"875"}
    assert numbers("Hydration went from 75% to 80, in 2024 (around May 2025)") == {"75", "80", "2024"}


def test_link_features_name_a_moved_number_only_with_a_word_in_common() -> None:
    moved = link_features(
        newer="Rating went up to 1912",
        older="Classical rating is 1840",
        cosine=0.5,
        days_apart=100.0,
        change=0.6,
    )
    assert dict(zip(LINK_FEATURES, moved, strict=True)) == {
        "cosine": 0.5,
        "shared_words": 1.0,
        "days_apart": pytest.approx(math.log1p(100.0)),
        "change": 0.6,
        "other_number": 1.0,
    }
    unrelated = link_features(newer="Bought 3 mugs", older="Rating is 1840", cosine=0.1, days_apart=-5.0, change=0.0)
    assert unrelated[LINK_FEATURES.index("other_number")] == 0.0
    assert unrelated[LINK_FEATURES.index("days_apart")] == 0.0  # never negative
