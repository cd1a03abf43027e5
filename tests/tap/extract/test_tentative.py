"""Tentative statements: what the rules leave out for its wording alone is written when the keep
probe says it is worth a memory; otherwise only its excerpt stays. The probe here is set by the
test (tap.extract.pipeline.Extraction.probes) so each outcome is the pipeline's rule, not the
trained weights'; the runtime is the real offline default (rules, real embedder)."""

from __future__ import annotations

from datetime import UTC, datetime

from tap.language.probes import Probe, Probes
from tap.language.rules.extractor import TENTATIVE
from tap.records import IngestEvent, Memory, Message
from tap.wiring.runtime import Runtime

AT = datetime(2025, 3, 1, 9, 0, tzinfo=UTC).timestamp()
SURE = "Kettlebell swings every morning now"


def probes_sure_of(rt: Runtime, text: str) -> Probes:
    """Probes whose keep probe is sure only of statements that mean `text` (cosine near 1)."""
    [target] = rt.embedder.embed_documents([text])
    keep = Probe(weights=tuple(8.0 * x for x in target), bias=0.2, threshold=0.995)  # 0.9997 at cosine 1, 0.73 at 0.1
    return Probes(embedder=rt.embedder.model_id, keep=keep)


def say(rt: Runtime, conversation: str, *texts: str, at: float = AT) -> None:
    messages = [
        Message(role="user", content=t, id=f"{conversation}:{i}", timestamp=at + i) for i, t in enumerate(texts)
    ]
    rt.ingestor.ingest(IngestEvent(scope="me", conversation=conversation, source="proxy", messages=messages))
    rt.worker.drain()


def statements(rt: Runtime) -> list[Memory]:
    return [m for m in rt.store.iter_memories(scope="me") if m.kind != "episode"]


def test_a_tentative_statement_is_written_when_the_keep_probe_is_sure(rt: Runtime) -> None:
    rt.worker.extraction.probes = probes_sure_of(rt, SURE)
    say(rt, "c1", "kettlebell swings every morning now", "the weather has been grim all week in the valley")
    written = statements(rt)
    assert [m.content for m in written] == [SURE]
    assert TENTATIVE in written[0].tags
    excerpts = [m.content for m in rt.store.iter_memories(scope="me") if m.kind == "episode"]
    assert any("weather" in e for e in excerpts)  # what is left out stays in the excerpt layer


def test_without_probes_no_tentative_statement_is_written(rt: Runtime) -> None:
    rt.worker.extraction.probes = None
    say(rt, "c1", "kettlebell swings every morning now")
    assert statements(rt) == []
