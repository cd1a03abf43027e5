"""Agent loops through tap: every tool step carries the block of its human turn, byte for byte,
recall runs once per human turn, the client's cached prefixes stay valid, and a tool step is
never captured as a new human turn.

The clients are the real SDKs driven like an agent (Claude Code style for Anthropic: a breakpoint
on the newest message's last block, on the system prompt and on the tools); the upstreams are
loopback fakes that answer with tool calls and check every request's cache prefixes against the
previous one (tests/proxy/loop_upstreams.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from tap.recall.engine import HEADER
from tests.proxy.harness import TapProxy
from tests.proxy.loop_upstreams import ChattyAnthropic, ChattyOpenAI, prefix_violations
from tests.sdk import sdk

if TYPE_CHECKING:
    import anthropic
    import openai
else:
    anthropic = sdk("anthropic")
    openai = sdk("openai")

CC = {"type": "ephemeral"}
SYSTEM = [{"type": "text", "text": "You are a coding agent.", "cache_control": CC}]
TOOLS: list[Any] = [{"name": "lookup", "description": "Look things up.", "input_schema": {"type": "object"}}]
MEMORY = "The user deploys the shop app to Fly.io from the main branch"
STEPS = 5


def marked(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The history as Claude Code sends it: one breakpoint, on the newest message's last block."""
    out = list(history)
    last = out[-1]
    content = last["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
    out[-1] = {**last, "content": [*blocks[:-1], {**blocks[-1], "cache_control": CC}]}
    return out


async def anthropic_step(client: anthropic.AsyncAnthropic, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One streamed request; returns the reply's content blocks as the client keeps them."""
    tools = [{**TOOLS[0], "cache_control": CC}]
    async with client.messages.stream(
        model="claude-haiku-4-5", max_tokens=256, system=SYSTEM, tools=tools, messages=marked(history)
    ) as stream:
        message = await stream.get_final_message()
    return [block.model_dump(exclude_none=True, exclude={"citations"}) for block in message.content]


def tool_results(content: list[dict[str, Any]], step: int) -> dict[str, Any]:
    calls = [b for b in content if b["type"] == "tool_use"]
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": c["id"], "content": f"result {step}"} for c in calls],
    }


def last_block(payload: dict[str, Any]) -> dict[str, Any]:
    block: dict[str, Any] = payload["messages"][-1]["content"][-1]
    return block


async def test_anthropic_tool_steps_carry_identical_blocks_and_keep_the_cache(isolated_home: Path) -> None:
    async with ChattyAnthropic() as up, TapProxy(isolated_home, anthropic=up.url) as tap:
        tap.remember(MEMORY, importance=4)
        client = anthropic.AsyncAnthropic(base_url=tap.url, api_key="sk-ant-loop", max_retries=0)
        history: list[dict[str, Any]] = [{"role": "user", "content": "Please deploy the shop app"}]
        up.tool_use = True
        for step in range(STEPS + 1):  # the human turn, then five tool steps
            up.tool_use = step < STEPS
            reply = await anthropic_step(client, history)
            history += [{"role": "assistant", "content": reply}]
            if step < STEPS:
                history.append(tool_results(reply, step))
        history.append({"role": "user", "content": "Now check the logs of the shop app deploy"})
        up.tool_use = True
        for step in range(3):  # a second human turn and two tool steps
            up.tool_use = step < 2
            reply = await anthropic_step(client, history)
            history += [{"role": "assistant", "content": reply}]
            if step < 2:
                history.append(tool_results(reply, 10 + step))
        await client.close()
        await tap.settle()
        assert tap.turn_log is not None
        logged = sorted(tap.turn_log.recent(limit=50), key=lambda e: e.started_at)  # captures run in background
        status = tap.ctx.status()
    requests = [r.json() for r in up.requests]
    assert len(requests) == STEPS + 1 + 3
    assert up.violations == []
    first_turn = [last_block(r) for r in requests[: STEPS + 1]]
    assert first_turn[0]["type"] == "text" and MEMORY in first_turn[0]["text"] and HEADER in first_turn[0]["text"]
    assert all(b == first_turn[0] and "cache_control" not in b for b in first_turn)  # the same bytes each step
    for payload in requests[1 : STEPS + 1]:
        results = payload["messages"][-1]["content"][:-1]
        assert [b["type"] for b in results] == ["tool_result"] and "cache_control" in results[-1]
    second_turn = [last_block(r) for r in requests[STEPS + 1 :]]
    assert all(b == second_turn[0] for b in second_turn)
    assert status["intercept"] == {"recalls": 2, "blocks_reused": STEPS + 2, "lexical_only": 0}  # once per human turn
    assert status["recall_ms"]["count"] == 2
    assert len({e.conversation for e in logged}) == 1 and len(logged) == STEPS + 1 + 3
    humans = [e.user_text for e in logged if e.user_text]
    assert humans == ["Please deploy the shop app", "Now check the logs of the shop app deploy"]
    assert [e.reply_text for e in logged] == [f"Reply number {n}." for n in range(1, STEPS + 5)]
    events = sorted((m for e in tap.events for m in e.messages), key=lambda m: m.timestamp)
    assert [m.content for m in events if m.role == "user"] == humans  # a tool step is not a human turn
    assert len({m.id for m in events}) == len(events)  # every turn has its own id


def test_the_prefix_check_catches_a_block_inside_a_cached_prefix() -> None:
    human = {"role": "user", "content": [{"type": "text", "text": "q", "cache_control": CC}]}
    before = {"system": SYSTEM, "messages": [human]}
    block = {"type": "text", "text": "<recalled-memories>…"}
    re_inserted = {"role": "user", "content": [{"type": "text", "text": "q"}, block]}
    step = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "r"}]}
    fine = {
        "system": SYSTEM,
        "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}, step],
    }
    assert prefix_violations(before, fine) == []
    moved_system = {**fine, "system": [{"type": "text", "text": "memories"}, *SYSTEM]}
    assert prefix_violations(before, moved_system) != []
    after_block = {"system": SYSTEM, "messages": [re_inserted, {"role": "assistant", "content": "a"}, step]}
    cached_block = {
        "system": SYSTEM,
        "messages": [{**human, "content": [*human["content"], {**block, "cache_control": CC}]}],
    }
    assert prefix_violations(after_block, fine) == []  # nothing was cached after the block
    assert prefix_violations(cached_block, fine) != []  # a block inside a cached prefix breaks the next step


async def test_openai_tool_steps_carry_identical_blocks(isolated_home: Path) -> None:
    async with ChattyOpenAI() as up, TapProxy(isolated_home, openai=up.url) as tap:
        tap.remember(MEMORY, importance=4)
        client = openai.AsyncOpenAI(base_url=tap.url + "/v1", api_key="sk-openai-loop", max_retries=0)
        tools: Any = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
        history: list[dict[str, Any]] = [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": "Please deploy the shop app"},
        ]
        for step in range(STEPS + 1):
            up.tool_use = step < STEPS
            completion = await client.chat.completions.create(model="gpt-4o", messages=history, tools=tools)  # type: ignore[arg-type]
            message = completion.choices[0].message.model_dump(exclude_none=True)
            history.append(message)
            for call in message.get("tool_calls", []):
                history.append({"role": "tool", "tool_call_id": call["id"], "content": f"result {step}"})
        await client.close()
        await tap.settle()
        assert tap.turn_log is not None
        logged = tap.turn_log.recent(limit=50)
        status = tap.ctx.status()
    requests = [r.json() for r in up.requests]
    assert up.violations == []
    human = requests[0]["messages"][-1]
    assert human["role"] == "user" and human["content"][0] == {"type": "text", "text": "Please deploy the shop app"}
    block = human["content"][-1]["text"]
    assert MEMORY in block
    for payload in requests[1:]:
        tool, appended = payload["messages"][-2:]
        assert tool["role"] == "tool" and appended == {"role": "user", "content": block}
        assert payload["messages"][:-1] == history[: len(payload["messages"]) - 1]  # the client's own, untouched
    assert status["intercept"] == {"recalls": 1, "blocks_reused": STEPS, "lexical_only": 0}
    assert len({e.conversation for e in logged}) == 1
    assert [e.user_text for e in logged if e.user_text] == ["Please deploy the shop app"]
