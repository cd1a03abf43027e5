"""AgentMemory: the tool operations' answers (scope, budget, forget's two steps) on a fake store."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

from tap.config import LoadedConfig, parse_config
from tap.extract.remember import remember
from tap.memories.agent import AgentMemory, Confirmations, ToolInputError
from tap.memories.agent_text import MAX_ANSWER_CHARS
from tap.wiring.runtime import Runtime, open_runtime
from testkit.fakes import fake_adapters


@pytest.fixture
def agent(isolated_home: Path) -> Iterator[tuple[AgentMemory, Runtime]]:
    loaded = LoadedConfig(config=parse_config(""), path=None, data_dir=isolated_home)
    rt = open_runtime(loaded, adapters=fake_adapters)
    yield AgentMemory(rt.memories, functools.partial(remember, rt.worker.extraction), Confirmations()), rt
    rt.close()


def test_answers_stay_within_the_budget_and_say_what_was_left_out(agent: tuple[AgentMemory, Runtime]) -> None:
    tools, rt = agent
    for n in range(50):
        rt.memories.add(scope="big", content=f"Deployment note {n}: " + "the billing service deploys " * 40)
    answer = tools.recent("big", limit=50)
    assert len(answer) <= MAX_ANSWER_CHARS + 200
    assert answer.splitlines()[-1].startswith("… ") and "left out" in answer
    assert all(len(line) < 800 for line in answer.splitlines())  # long statements are shortened


def test_bad_arguments_say_how_to_call_right(agent: tuple[AgentMemory, Runtime]) -> None:
    tools, _ = agent
    for call, words in [
        (lambda: tools.search("me", "   "), "query is empty"),
        (lambda: tools.search("me", "x", limit=0), "limit must be"),
        (lambda: tools.recent("me", kind="gossip"), "kind must be one of"),
        (lambda: tools.remember("me", "fine", importance=9), "importance must be"),
        (lambda: tools.forget("me"), "exactly one of"),
        (lambda: tools.forget("me", confirm="forget-made-up"), "unknown, already used or expired"),
        (lambda: tools.why("me"), "needs `tap serve`"),
    ]:
        with pytest.raises(ToolInputError, match=words):
            call()


def test_a_confirmation_is_single_use_bound_to_its_scope_and_expires() -> None:
    clock = [0.0]
    confirmations = Confirmations(ttl_s=60, now=lambda: clock[0])
    token = confirmations.issue("me", ("m_1", "m_2"))
    with pytest.raises(ToolInputError):
        confirmations.take(token, "other")
    assert confirmations.take(token, "me") == ("m_1", "m_2")
    with pytest.raises(ToolInputError, match="already used"):
        confirmations.take(token, "me")
    late = confirmations.issue("me", ("m_3",))
    clock[0] = 61.0
    with pytest.raises(ToolInputError, match="expired"):
        confirmations.take(late, "me")
