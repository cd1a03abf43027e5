"""`tap mcp` as an agent runs it, driven by the MCP SDK's own stdio client.

Without a server it answers from the embedded store (Chroma and the ONNX model), in the scope of
the git project it was started in; stdout carries nothing but protocol messages; bad input is an
error result and the server goes on. With a `tap serve` running, every call goes through the
server (the one writer of the data dir), and the entry `tap hooks install` registers starts it.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult, TextContent

from tap.cli.main import main
from testkit.agent_hooks import TAP
from testkit.serve_process import ServeProcess, admin

pytestmark = pytest.mark.slow


def text_of(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def environment(home: Path) -> dict[str, str]:
    drop = ("TAP_CONFIG", "TAP_ADMIN_TOKEN", "CLAUDE_PROJECT_DIR")
    return {**{k: v for k, v in os.environ.items() if k not in drop}, "TAP_HOME": str(home)}


def project(tmp_path: Path) -> Path:
    root = tmp_path / "billing"
    (root / ".git").mkdir(parents=True)
    (root / "src").mkdir()
    return root


async def calls(params: StdioServerParameters, steps: list[tuple[str, dict[str, Any]]]) -> list[CallToolResult]:
    async with Client(params) as client:
        return [await client.call_tool(tool, arguments) for tool, arguments in steps]


def test_every_tool_on_the_embedded_store_in_the_projects_scope(tmp_path: Path) -> None:
    home, root = tmp_path / "home", project(tmp_path)
    params = StdioServerParameters(command=TAP, args=["mcp"], env=environment(home), cwd=str(root / "src"))

    async def session() -> tuple[list[str], list[CallToolResult]]:
        async with Client(params) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            done = [
                await client.call_tool("remember", {"text": "The user lives in Berlin", "kind": "fact"}),
                await client.call_tool("remember", {"text": "The user moved to Lisbon"}),
                await client.call_tool(
                    "search_memories", {"query": "where does the user live", "include_history": True}
                ),
                await client.call_tool("recent_memories", {"limit": 5}),
                await client.call_tool("forget", {"query": "Lisbon"}),
                await client.call_tool("why", {}),
                await client.call_tool("nope", {}),
                await client.call_tool("search_memories", {"query": 42}),
                await client.call_tool("remember", {"text": "x" * 5000}),
            ]
            token = re.search(r"confirm='(forget-[\w-]+)'", text_of(done[4]))
            assert token is not None, text_of(done[4])
            done.append(await client.call_tool("forget", {"confirm": token[1]}))
            done.append(await client.call_tool("recent_memories", {}))
            return names, done

    names, done = asyncio.run(session())
    assert names == ["search_memories", "remember", "forget", "recent_memories", "why"]
    berlin, lisbon, search, recent, listed, why, unknown, wrong, huge, forgot, after = done
    assert text_of(berlin).startswith("Remembered [m_")
    assert "It replaces" in text_of(lisbon) and "lives in Berlin" in text_of(lisbon)  # an update supersedes
    assert f"in scope {root}" in text_of(search)  # the git root, not the subdirectory it started in
    assert "moved to Lisbon" in text_of(search) and "earlier [" in text_of(search)
    assert "moved to Lisbon" in text_of(recent) and "lives in Berlin" not in text_of(recent)
    assert text_of(listed).startswith("Nothing is forgotten yet")
    assert why.is_error and "tap serve" in text_of(why)
    assert unknown.is_error and "Unknown tool" in text_of(unknown)
    assert wrong.is_error and "query" in text_of(wrong)
    assert huge.is_error
    assert text_of(forgot).startswith("Forgot [m_") and "No memories" in text_of(after)


def test_stdout_carries_only_protocol_messages(tmp_path: Path) -> None:
    home, root = tmp_path / "home", project(tmp_path)
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "recent_memories", "arguments": {}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "remember", "arguments": {"text": 7}}},
    ]
    proc = subprocess.Popen(
        [TAP, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=environment(home), cwd=root
    )
    assert proc.stdin is not None and proc.stdout is not None
    watchdog = threading.Timer(120, proc.kill)  # a hung server fails the test instead of hanging it
    watchdog.start()
    try:
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
        proc.stdin.flush()
        answers = [json.loads(proc.stdout.readline()) for _ in range(4)]  # every line a JSON-RPC message
        proc.stdin.close()  # the agent goes: the server ends, and writes nothing more
        rest = proc.stdout.read()
        assert proc.wait(30) == 0 and rest.strip() == ""
    finally:
        watchdog.cancel()
        proc.kill()
    assert all(a["jsonrpc"] == "2.0" for a in answers)
    by_id = {a["id"]: a for a in answers}  # calls are answered as they finish, not in order
    assert sorted(by_id) == [1, 2, 3, 4] and len(answers) == 4
    assert by_id[3]["result"]["isError"] is False and by_id[4]["result"]["isError"] is True


def test_calls_go_through_a_running_server_and_the_installed_entry_starts_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, root = tmp_path / "home", project(tmp_path)
    home.mkdir()
    config = tmp_path / "tap.toml"
    config.write_text("[recall]\ndeadline_ms = 3000\n")  # a busy test host must not shed the recall
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.setenv("TAP_HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.chdir(root)
    installed = CliRunner().invoke(main, ["--config", str(config), "hooks", "install", "--project"])
    assert installed.exit_code == 0, installed.output
    entry = json.loads((root / ".mcp.json").read_text())["mcpServers"]["tap"]
    assert entry["type"] == "stdio" and entry["args"][-1] == "mcp" and entry["env"] == {"TAP_HOME": str(home)}
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=environment(home), cwd=str(root))
    server = ServeProcess(home, config=config).start()
    try:
        saved, why = asyncio.run(
            calls(params, [("remember", {"text": "The billing team ships on Thursdays"}), ("why", {})])
        )
        assert text_of(saved).startswith("Remembered [m_"), text_of(saved)
        listed = admin(server, "GET", f"/tap/memories?scope={root}&limit=10")  # the server wrote it
        assert [m["content"] for m in listed["memories"]] == ["The billing team ships on Thursdays"]
        assert listed["memories"][0]["source"] == "mcp"
        assert not why.is_error and "No recall records" in text_of(why)  # the server's records answer
    finally:
        server.stop()
