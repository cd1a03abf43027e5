"""The memory-quality benchmark (bench/quality.py): its labelled data set, its scoring, a smoke run.

The data set is the ground truth the team optimises against, so it is checked here: valid ids and
references, the sizes issue #12 asks for, and labels sharp enough that the labels' own statements
score perfectly (the oracle) while each metric can still fail. The smoke run starts the benchmark
as a user would (`python bench/quality.py --quick`), on real tap components, and checks its JSON.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import msgspec
import pytest

from tap.config import parse_config
from tap.records import Memory

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
TIMEOUT_S = 300


def _load_bench() -> ModuleType:
    """bench/quality.py as a module (its sibling `benchutil` must be importable)."""
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location("bench_quality", BENCH / "quality.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


quality = _load_bench()
CONVERSATIONS = quality.load()


def _total(results: list[Any]) -> dict[str, Any]:
    counts: Counter[str] = Counter()
    for result in results:
        counts.update(result.counts)
    rates: dict[str, Any] = quality.rates(counts)
    return rates


def test_data_set_is_valid_and_big_enough() -> None:
    assert quality.validate(CONVERSATIONS) == []
    size = quality.summarise(CONVERSATIONS)
    assert size["conversations"] >= 94
    assert size["turns"] >= 1600
    assert size["updates"] >= 200
    turn_ids = [t.id for c in CONVERSATIONS for t in c.turns]
    label_ids = [label.id for c in CONVERSATIONS for label in c.labels]
    assert len(turn_ids) == len(set(turn_ids))
    assert len(label_ids) == len(set(label_ids))
    for conv in CONVERSATIONS:
        turns = {t.id for t in conv.turns}
        labels = {label.id for label in conv.labels}
        assert len(conv.sessions) >= 2, conv.id  # several sessions per person
        for label in conv.labels:
            assert set(label.turns) <= turns, label.id
            assert set(label.supersedes) <= labels, label.id
            if label.supersedes:
                assert label.question.strip().endswith("?"), label.id


def test_splits_old_set_is_dev_new_frozen_set_is_test_and_both_cover_every_theme() -> None:
    # everything written before 2026-12-07 (q01-q50) was looked at during development: dev;
    # the test split (q51-q96) was written in one go from the format alone and is frozen
    dev = [c for c in CONVERSATIONS if c.split == "dev"]
    test = [c for c in CONVERSATIONS if c.split == "test"]
    assert {c.id for c in dev} >= {f"q{n:02d}" for n in range(1, 51)}
    assert {c.id for c in test} == {f"q{n:02d}" for n in range(51, 97)}
    for split in (dev, test):
        assert {c.theme for c in split} == {"personal", "work", "mixed", "group"}
        assert {c.source for c in split} == {"proxy", "telegram", "logtail"}
    size = quality.summarise(test)
    assert size["conversations"] >= 40
    assert size["turns"] >= 600
    assert size["updates"] >= 60
    assert quality.summarise(dev)["updates"] >= 60
    for conv in test:
        assert len(conv.sessions) >= 2, conv.id
        assert all(s.turns for s in conv.sessions), conv.id


# sha256 over the test split's files (name, NUL, bytes; in name order). The test split is frozen:
# this changes only in a commit of its own that fixes a wrong label and says why (README, Splits).
TEST_SPLIT_SHA256 = "566f0b94a5c57600064f90480897bc1df37875133111dfae83bf9b53cf046be9"


def test_the_test_split_is_frozen() -> None:
    digest = hashlib.sha256()
    for path in sorted(quality.DATA_DIR.glob("q*.json")):
        if msgspec.json.decode(path.read_bytes())["split"] == "test":
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    assert digest.hexdigest() == TEST_SPLIT_SHA256


def test_a_fragment_does_not_match_and_a_paraphrase_does() -> None:
    label = quality.Label(
        id="q99.L1",
        kind="fact",
        statement="The user moved to Lisbon.",
        turns=["q99s1t1"],
        must=[["lisbon"], ["live", "moved", "based"]],
        must_not=["brother"],
    )
    matcher = quality.Matcher(label)

    def memory(content: str, sources: list[str]) -> Memory:
        return Memory(id="m", scope="s", content=content, sources=sources)

    assert matcher.matches(memory("Ana MOVED to Lisbon in May 2026.", ["q99s1t1", "q99s1t2"]))
    assert matcher.matches(memory("The user lives in Lisbon these days", ["q99s1t1"]))
    assert not matcher.matches(memory("The user moved to Lisbon.", ["q99s1t2"]))  # wrong turn
    assert not matcher.matches(memory("User: finally!! Lisbon", ["q99s1t1"]))  # fragment
    assert not matcher.matches(memory("The user's brother moved to Lisbon.", ["q99s1t1"]))
    exact = quality.Matcher(quality.Label(id="q99.L2", kind="fact", statement="Go.", turns=["t"], must=[["=go"]]))
    assert exact.matches(memory("The CLI is written in Go.", ["t"]))
    assert not exact.matches(memory("It is going well at Google.", ["t"]))
    accents = quality.Matcher(
        quality.Label(id="q99.L3", kind="fact", statement="Chloe.", turns=["t"], must=[["chloe"], ["3d artist"]])
    )
    assert accents.matches(memory("Chloé is a 3D artist.", ["t"]))


def test_the_labels_own_statements_score_perfectly() -> None:
    rates = _total([quality.run_oracle(c) for c in CONVERSATIONS])
    assert rates["precision"] == 1.0
    assert rates["junk_rate"] == 0.0
    assert rates["recall"] == 1.0
    assert rates["duplicate_rate"] == 0.0
    assert rates["supersession_accuracy"] == 1.0
    assert rates["wrong_supersessions"] == 0
    assert rates["current_first"] == 1.0
    assert rates["superseded_in_blocks"] == 0


def test_each_metric_can_fail() -> None:
    conv = next(c for c in CONVERSATIONS if c.id == "q01")
    perfect = quality.oracle_memories(conv)
    by_label = {m.id.removeprefix("oracle-"): m for m in perfect}
    unlabelled = next(t.id for t in conv.turns if not any(t.id in label.turns for label in conv.labels))

    # updates not applied: the old value stays active
    stale = [msgspec.structs.replace(m, superseded_by="") for m in perfect]
    result = quality.score(conv, stale, [])
    assert result.counts["update_old-still-active"] == result.counts["updates"] > 0
    assert quality.rates(result.counts)["supersession_accuracy"] == 0.0

    # a junk memory, a duplicate, a wrong supersession, the old value ranked first, a superseded
    # memory in a block
    junk = Memory(id="junk", scope=conv.scope, content="The user says thanks.", sources=[unlabelled])
    twin = Memory(id="twin", scope=conv.scope, content="The user is German.", sources=by_label["q01.L6"].sources)
    cat = by_label["q01.L3"]
    wronged = msgspec.structs.replace(cat, superseded_by="junk")
    memories = [m for m in perfect if m.id != cat.id] + [junk, twin, wronged]
    old, new = by_label["q01.L1"], by_label["q01.L7"]
    probe = quality.Probe("q01.L7", "Where does the user live these days?", [old, new])
    result = quality.score(conv, memories, [probe])
    rates = quality.rates(result.counts)
    assert result.counts["junk"] == 1 and rates["precision"] < 1.0
    assert result.counts["duplicates"] == 1
    assert result.counts["wrong_supersessions"] == 1
    assert rates["current_first"] == 0.0 and rates["current_top1"] == 0.0
    assert result.counts["superseded_in_blocks"] == 1  # `old` is superseded
    assert {item["outcome"] for item in result.failures["ranking"]} == {"old-first"}

    # nothing stored at all: recall 0 and every update missing
    empty = quality.score(conv, [], [])
    assert quality.rates(empty.counts)["recall"] == 0.0
    assert empty.counts["update_new-missing"] == empty.counts["updates"]


@pytest.mark.slow
def test_quick_run_writes_sane_results(tmp_path: Path) -> None:
    out = tmp_path / "quality.json"
    log = tmp_path / "quality.log"
    with log.open("w") as sink:
        proc = subprocess.run(
            [sys.executable, str(BENCH / "quality.py"), "--quick", "--out", str(out)],
            cwd=ROOT,
            stdout=sink,
            stderr=subprocess.STDOUT,
            timeout=TIMEOUT_S,
        )
    output = log.read_text()
    assert proc.returncode == 0, output
    assert "written to" in output and "precision" in output
    result = json.loads(out.read_text())
    assert result["benchmark"] == "quality" and result["mode"] == "quick"
    assert result["machine"]["cpus"]
    assert result["selection"]["conversations"] == list(quality.QUICK)
    assert set(result["targets"]) == set(quality.TARGETS)
    total = result["splits"]["all"]
    assert total["counts"]["conversations"] == 3
    assert total["counts"]["turns"] == sum(len(c.turns) for c in CONVERSATIONS if c.id in quality.QUICK)
    assert total["counts"]["memories"] > 0
    assert total["counts"]["probes"] > 0
    for key in ("precision", "junk_rate", "recall", "duplicate_rate", "supersession_accuracy", "current_first"):
        value = total["rates"][key]
        assert value is not None and 0.0 <= value <= 1.0, key
    assert total["rates"]["superseded_in_blocks"] >= 0
    assert {c["id"] for c in result["conversations"]} == set(quality.QUICK)
    outcomes = {item["outcome"] for item in result["update_outcomes"]}
    assert outcomes <= {"ok", "old-still-active", "new-missing", "new-superseded"}
    assert len(result["update_outcomes"]) == total["counts"]["updates"]
    assert "failures" in result and "queue_left" not in result["failures"]


def test_a_models_run_has_a_result_file_of_its_own() -> None:
    def named(toml: str, mode: str) -> str:
        return str(quality.result_name(parse_config(toml), mode))

    assert named("", "full") == "quality" and named("", "quick") == "quality-quick"
    local = '[extract]\nprovider = "openai"\nopenai_model = "Qwen/Qwen2.5-7B-Instruct:q4"'
    assert named(local, "full") == "quality-openai-Qwen-Qwen2.5-7B-Instruct-q4"
    assert (
        named('[extract]\nprovider = "ollama"\nollama_model = "llama3.2"', "quick") == "quality-ollama-llama3.2-quick"
    )
    assert named('[extract]\nprovider = "anthropic"', "full") == "quality-anthropic-claude-sonnet-4-6"
    assert named(local, "oracle") == "quality-oracle"


@pytest.mark.slow
def test_quick_run_against_a_scripted_openai_compatible_model(tmp_path: Path) -> None:
    """The LLM path end to end: bench/fake_llm.py answers from a fixture over the real wire format;
    tap extracts through the OpenAI-compatible provider and reconciles the annotated statements."""
    port_file = tmp_path / "port"
    fake = subprocess.Popen(
        [sys.executable, str(BENCH / "fake_llm.py"), str(BENCH / "fixtures" / "fake-llm-quick.json"), str(port_file)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 30
        while not (port_file.exists() and port_file.read_text()) and time.monotonic() < deadline:
            assert fake.poll() is None, "the fake model exited"
            time.sleep(0.05)
        config = tmp_path / "fake.toml"
        url = f"http://127.0.0.1:{port_file.read_text()}/v1"
        config.write_text(f'[extract]\nprovider = "openai"\nopenai_url = "{url}"\nopenai_model = "fixture"\n')
        out, log = tmp_path / "quality-fake.json", tmp_path / "quality.log"
        with log.open("w") as sink:
            done = subprocess.run(
                [sys.executable, str(BENCH / "quality.py"), "--quick", "--config", str(config), "--out", str(out)],
                cwd=ROOT,
                stdout=sink,
                stderr=subprocess.STDOUT,
                timeout=TIMEOUT_S,
            )
    finally:
        fake.terminate()
        fake.wait(timeout=10)
    assert done.returncode == 0, log.read_text()
    result = json.loads(out.read_text())
    assert result["extractor"] == {"provider": "openai", "model": "fixture", "gate": "heuristic", "reconcile": "rules"}
    (extract,) = result["llm"]
    assert extract["provider"] == "openai-compatible" and extract["purpose"] == "extract" and extract["calls"] > 0
    assert extract["cost_usd"] == 0
    rates = result["splits"]["all"]["rates"]
    assert rates["precision"] == 1.0 and rates["superseded_in_blocks"] == 0
    # every update of the fixture is applied by the rules reconcile from the model's annotations
    assert rates["update_outcomes"]["ok"] == result["splits"]["all"]["counts"]["updates"] > 0
    assert "queue_left" not in result["failures"]
