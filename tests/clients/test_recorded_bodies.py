"""What the current Claude Code and Codex send, replayed through tap (testkit/data/clients).

The bodies were recorded from the real CLIs (testkit/clients/record.py; the version is in each
folder's meta.json). Each is posted to tap's proxy as the CLI posted it; the fake model API behind
tap records what arrived. The first prompt of a Claude Code session ends with a `role: "system"`
message (its environment notes, carrying its cache breakpoint): tap must still find the human
turn, recall for it and put the block at the end of that human message, and leave every other
byte of the request as the client sent it.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import aiohttp

from tap.intercept.core import DEGRADED_HEADER, RECALLED_HEADER
from testkit.clients.models import AgentAnthropic, AgentOpenAI
from testkit.clients.recorded import body, decoded, recorded
from tests.proxy.harness import TapProxy

CLAUDE_CODE = recorded("claude-code")
CODEX = recorded("codex")
ANTHROPIC_HEADERS = {"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01", "content-type": "application/json"}
OPENAI_HEADERS = {"authorization": "Bearer sk-test", "content-type": "application/json"}
MEMORY = "The user wants the study painted teal, their favourite colour"


async def post(url: str, raw: bytes, headers: dict[str, str]) -> tuple[int, bytes, Any]:
    async with aiohttp.ClientSession() as session, session.post(url, data=raw, headers=headers) as resp:
        return resp.status, await resp.read(), resp.headers


def block_of(block: Any) -> str:
    assert isinstance(block, dict) and block.get("type") in ("text", "input_text"), block
    assert "cache_control" not in block
    return str(block["text"])


def assert_recalled(headers: Any) -> None:
    assert DEGRADED_HEADER not in headers, headers.get(DEGRADED_HEADER)
    assert int(headers[RECALLED_HEADER]) >= 1


async def test_the_first_prompt_of_a_claude_code_session_carries_the_block(isolated_home: Path) -> None:
    sent = decoded(CLAUDE_CODE, "first-prompt.json")
    assert [m["role"] for m in sent["messages"]] == ["user", "system"]  # what broke recall before
    async with AgentAnthropic() as up, TapProxy(isolated_home, anthropic=up.url) as tap:
        tap.remember(MEMORY, importance=4)
        status, _, headers = await post(
            tap.url + "/v1/messages?beta=true", body(CLAUDE_CODE, "first-prompt.json"), ANTHROPIC_HEADERS
        )
        assert status == 200
        assert_recalled(headers)
        (arrived,) = [r.json() for r in up.requests]
    human, system_notes = arrived["messages"]
    assert human["content"][:-1] == sent["messages"][0]["content"]  # the client's blocks, unchanged
    block = block_of(human["content"][-1])
    assert block.startswith("<recalled-memories>") and "painted teal" in block
    assert system_notes == sent["messages"][1]  # the environment notes and their breakpoint: untouched
    expected = copy.deepcopy(sent)
    expected["messages"][0]["content"].append(human["content"][-1])
    assert arrived == expected  # and nothing else moved: system, tools, metadata, key order
    assert list(arrived) == list(sent)


async def test_the_next_claude_code_turn_gets_the_block_at_its_end(isolated_home: Path) -> None:
    first, second = decoded(CLAUDE_CODE, "first-prompt.json"), decoded(CLAUDE_CODE, "second-prompt.json")
    async with AgentAnthropic() as up, TapProxy(isolated_home, anthropic=up.url) as tap:
        tap.remember(MEMORY, importance=4)
        for name in ("first-prompt.json", "second-prompt.json"):
            status, _, headers = await post(
                tap.url + "/v1/messages?beta=true", body(CLAUDE_CODE, name), ANTHROPIC_HEADERS
            )
            assert status == 200
            assert_recalled(headers)
        await tap.settle()
        arrived = up.requests[-1].json()
        conversations = {event.conversation for event in tap.events}
    newest = arrived["messages"][-1]
    assert newest["content"][:-1] == second["messages"][-1]["content"]
    assert "painted teal" in block_of(newest["content"][-1])
    assert arrived["messages"][:-1] == second["messages"][:-1]  # history as the client sent it
    assert json.dumps(second["messages"][0]) == json.dumps(first["messages"][0])  # the cached prefix holds
    assert len(conversations) == 1  # both turns: the one Claude Code session


async def test_codex_exec_carries_the_block(isolated_home: Path) -> None:
    sent = decoded(CODEX, "exec.json")
    async with AgentOpenAI() as up, TapProxy(isolated_home, openai=up.url) as tap:
        tap.remember(MEMORY, importance=4)
        status, _, headers = await post(tap.url + "/v1/responses", body(CODEX, "exec.json"), OPENAI_HEADERS)
        assert status == 200
        assert_recalled(headers)
        (arrived,) = [r.json() for r in up.requests]
    newest = arrived["input"][-1]
    assert newest["role"] == "user"
    assert newest["content"][:-1] == sent["input"][-1]["content"]
    assert "painted teal" in block_of(newest["content"][-1])
    assert arrived["input"][:-1] == sent["input"][:-1]
    assert {k: v for k, v in arrived.items() if k != "input"} == {k: v for k, v in sent.items() if k != "input"}
