"""Contradictions tap cannot settle: kept and marked by extraction, shown in blocks, listed, resolved."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from tap.cli.main import main
from tap.config import LoadedConfig, parse_config
from tap.records import IngestEvent, Memory, Message
from tap.wiring.runtime import Runtime, configured_adapters, open_runtime
from testkit.fakes import real_embedder_in_memory

T0 = 1_700_000_000.0
MONTH = 30 * 86400.0


def open_rt(home: Path, *, on_disk: bool = False) -> Runtime:
    """A runtime on the real embedder; its store in memory, or (`on_disk`, for the CLI to read) Chroma."""
    adapters = configured_adapters if on_disk else real_embedder_in_memory
    return open_runtime(LoadedConfig(config=parse_config(""), path=None, data_dir=home), adapters=adapters)


@pytest.fixture
def rt(isolated_home: Path) -> Iterator[Runtime]:
    runtime = open_rt(isolated_home)
    yield runtime
    runtime.close()


def say(rt: Runtime, scope: str, conversation: str, text: str, at: float) -> None:
    messages = [
        Message(role="user", content=text, id=f"{conversation}:0", timestamp=at),
        Message(role="assistant", content="Noted.", id=f"{conversation}:1", timestamp=at + 1),
    ]
    rt.ingestor.ingest(IngestEvent(scope=scope, conversation=conversation, source="proxy", messages=messages))
    rt.worker.drain()


def statements(rt: Runtime, scope: str) -> dict[str, Memory]:
    found = rt.store.list_memories(scope=scope, limit=100, include_superseded=True, excerpts=False)
    return {m.content: m for m in found}


def seed(rt: Runtime) -> None:
    say(rt, "ann", "a1", "I work at Google in Dublin.", T0)  # a second employer, no sign of change
    say(rt, "ann", "a2", "I work at Stripe.", T0 + MONTH)
    say(rt, "dee", "d1", "I live in Porto. I live in Braga.", T0)  # two values at the same moment
    say(rt, "cy", "c1", "I live in Berlin.", T0)  # controls: a plain update, and a job change
    say(rt, "cy", "c2", "I live in Lisbon.", T0 + MONTH)
    say(rt, "eve", "e1", "I work at Google in Dublin.", T0)
    say(rt, "eve", "e2", "I joined Stripe last week!", T0 + MONTH)


def test_extraction_keeps_both_sides_of_the_seeded_ambiguous_pairs(rt: Runtime) -> None:
    seed(rt)
    ann = statements(rt, "ann")
    google, stripe = ann["The user works at Google in Dublin"], ann["The user works at Stripe"]
    assert google.active and stripe.active
    assert google.conflicts_with == (stripe.id,) and stripe.conflicts_with == (google.id,)
    dee = [m for m in statements(rt, "dee").values() if m.slot == "user|residence"]
    assert len(dee) == 2 and all(m.active and m.conflicts_with for m in dee)
    for scope in ("cy", "eve"):  # what reconcile can tell stays an update
        assert not any(m.conflicts_with for m in statements(rt, scope).values())
        assert sum(not m.active for m in statements(rt, scope).values()) == 1
    pairs = rt.memories.conflicts()
    assert {(c.a.scope, c.a.id, c.b.id) for c in pairs} == {
        ("ann", google.id, stripe.id),
        ("dee", *sorted((m.id for m in dee), key=lambda i: next(m.created_at for m in dee if m.id == i))),
    }
    assert [c.a.scope for c in rt.memories.conflicts(scope="ann")] == ["ann"]


def test_the_block_shows_both_with_their_dates_until_resolved(rt: Runtime) -> None:
    seed(rt)
    ann = statements(rt, "ann")
    google, stripe = ann["The user works at Google in Dublin"], ann["The user works at Stripe"]
    block = rt.memories.recall_json("Is Stripe a good place to work?", scope="ann")["block"]
    for memory, day in ((google, "\n14 Nov 2023:"), (stripe, "\n14 Dec:")):  # both, each under its date
        assert f"- {memory.content} (unresolved: contradicts another note here; both kept)" in block
        assert day in block
    settled = rt.memories.resolve(stripe.id, google.id)
    assert settled.superseded is not None and settled.superseded.superseded_by == stripe.id
    block = rt.memories.recall_json("Where does the user work?", scope="ann")["block"]
    assert "- The user works at Stripe\n" in block and "works at Google" not in block.split("Excerpts")[0]
    assert "unresolved" not in block
    assert rt.memories.conflicts(scope="ann") == []
    assert [m.id for m in rt.memories.chain(stripe.id)] == [google.id, stripe.id]  # the history shows what it won over


def test_resolving_with_both_keeps_both_and_drops_the_mark(rt: Runtime) -> None:
    seed(rt)
    a, b = (m.id for m in statements(rt, "dee").values() if m.slot == "user|residence")
    settled = rt.memories.resolve(a, b, both=True)
    assert settled.also_kept is not None and settled.superseded is None
    assert all(m.active and not m.conflicts_with for m in statements(rt, "dee").values())
    with pytest.raises(ValueError, match="not in conflict"):
        rt.memories.resolve(a, b)


def test_consolidation_leaves_conflicts_to_the_user(rt: Runtime) -> None:
    old = T0 - 400 * 86400
    pair = [
        Memory(
            id=f"m_{k}",
            scope="fay",
            content=f"The user's cat is named {name}",
            importance=1,
            created_at=old,
            updated_at=old,
            valid_from=old,
            sources=[k],
            conflicts_with=[f"m_{other}"],
        )
        for k, name, other in (("p", "Pixel", "q"), ("q", "Pixel Junior", "p"))
    ]
    rt.memories.write(pair)
    report = rt.memories.consolidate(scope="fay")
    assert report["merged"] == 0 and report["archived"] == 0
    assert all(m.active for m in statements(rt, "fay").values())


def test_cli_lists_and_resolves(isolated_home: Path) -> None:
    rt = open_rt(isolated_home, on_disk=True)
    seed(rt)
    ann = statements(rt, "ann")
    rt.close()
    google, stripe = ann["The user works at Google in Dublin"].id, ann["The user works at Stripe"].id
    runner = CliRunner()
    listed = runner.invoke(main, ["memories", "conflicts", "--scope", "ann", "--json"], catch_exceptions=False)
    (pair,) = json.loads(listed.stdout)["conflicts"]
    assert {pair["a"]["id"], pair["b"]["id"]} == {google, stripe} and pair["since"] > 0
    text = runner.invoke(main, ["memories", "conflicts"], catch_exceptions=False).stdout
    assert "The user works at Stripe" in text and f"tap memories resolve {google} --keep {stripe}" in text
    wrong = runner.invoke(main, ["memories", "resolve", google, "--keep", "m_nope"])
    assert wrong.exit_code == 1 and "not" in wrong.stderr
    done = runner.invoke(main, ["memories", "resolve", google, "--keep", stripe], catch_exceptions=False)
    assert done.exit_code == 0 and f"{google} is superseded by it" in done.stdout
    assert (
        json.loads(runner.invoke(main, ["memories", "conflicts", "--json"]).stdout)["conflicts"][0]["a"]["scope"]
        == "dee"
    )
    shown = runner.invoke(main, ["memories", "show", stripe], catch_exceptions=False).stdout
    assert f"superseded by {stripe}" in shown and "← a2:0 (user" in shown
