"""MCP tools: `search_memories` latency at 10k memories (target p50 and p95 ≤ 50 ms server-side) and
the start-up of `tap mcp`, the stdio server an agent starts.

Server-side is the tool's work as the server does it for a call (search, answer text), timed in
process; the round trip over `/mcp` adds the SDK's request handling, HTTP and the client, which
`tools/list` on the same session shows on its own. Both are checked against the target.

Run: ``./dev bench mcp [--memories 10000] [--queries 100] [--quick] [--out FILE]``. Writes
``bench/results/mcp.json`` and prints a table.

Method: one data dir with `--memories` synthetic memories (bench/corpus.py: template texts, vectors
mixed from real MiniLM embeddings) in one project's scope, the default config. Measured in one run,
each with its own questions (bench/corpus.py queries; recall caches identical ones):
- in process, before any server starts: the tool's work (tap.memories.agent.AgentMemory.search:
  hybrid search, then the answer's text) and, interleaved with it, the search alone
  (MemoryService.search), the baseline the tool's cost is a ratio of;
- a real `tap serve` on that data dir: `search_memories` over `/mcp` from one MCP SDK client
  session (the request's round trip on loopback, so the server-side time plus the client's and
  HTTP's), and `tools/list` on the same session (the protocol's own cost: answered from memory)
  as its baseline;
- `tap mcp` (the installed script, started as an agent starts it, the SDK's stdio client): the
  time to its `initialize` answer, with the server running and without; `python -c pass` is the
  floor; then one `search_memories` through it (relayed to the server; without one, the first
  call that opens the store, and a second call).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import benchutil  # first: it moves this folder after the installed packages (this file is not the SDK)
import corpus
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tap.config import LoadedConfig, parse_config
from tap.memories.agent import AgentMemory, Confirmations
from tap.wiring.mcp_stdio import agent_memory
from tap.wiring.runtime import open_runtime
from testkit.serve_process import ServeProcess

TARGETS = {"search_p50_ms": 50.0, "search_p95_ms": 50.0}
TAP = str(Path(sys.executable).with_name("tap"))


def environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TAP_CONFIG", "TAP_ADMIN_TOKEN", "CLAUDE_PROJECT_DIR")}
    env["TAP_HOME"] = str(home)
    return env


def in_process(home: Path, project: Path, memories: int, questions: Sequence[str]) -> dict[str, Any]:
    """Build the store, then time the tool's work and the search alone, interleaved."""
    rt = open_runtime(LoadedConfig(config=parse_config(""), path=None, data_dir=home))
    try:
        pool = corpus.Corpus(rt.embedder, pool=min(1500, max(100, memories // 10)))
        build_s = corpus.fill(rt.store, pool, memories, scope=str(project)) + pool.embed_s
        agent: AgentMemory = agent_memory(rt, Confirmations())
        for question in corpus.queries(5, seed=777):  # warm-up, other questions
            agent.search(str(project), question)
        tool, search = [], []
        for question in questions:
            started = time.perf_counter()
            rt.memories.search(question + " (search)", scope=str(project), limit=10)
            search.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            answer = agent.search(str(project), question, limit=10)
            tool.append((time.perf_counter() - started) * 1000)
            assert answer
        return {
            "build_s": round(build_s, 1),
            "tool_ms": benchutil.summary_ms(tool),
            "search_ms": benchutil.summary_ms(search),
        }
    finally:
        rt.close()


async def over_http(url: str, token: str, scope: str, questions: Sequence[str]) -> dict[str, Any]:
    """`search_memories` and `tools/list` over one SDK client session on `/mcp`."""
    headers = {"Authorization": f"Bearer {token}", "x-tap-scope": scope.replace("/", "%2F")}
    async with (
        httpx2.AsyncClient(headers=headers, trust_env=False, timeout=60) as http,
        Client(streamable_http_client(url + "/mcp", http_client=http), cache=None) as client,
    ):
        for question in corpus.queries(5, seed=778):
            await client.call_tool("search_memories", {"query": question})
        search, listing = [], []
        for question in questions:
            started = time.perf_counter()
            await client.list_tools()
            listing.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            result = await client.call_tool("search_memories", {"query": question, "limit": 10})
            search.append((time.perf_counter() - started) * 1000)
            assert not result.is_error
    return {"search_ms": benchutil.summary_ms(search), "list_tools_ms": benchutil.summary_ms(listing)}


async def stdio_session(home: Path, project: Path, question: str, calls: int) -> dict[str, Any]:
    """Start `tap mcp` as an agent does: time to `initialize`, then `calls` searches."""
    params = StdioServerParameters(command=TAP, args=["mcp"], env=environment(home), cwd=str(project))
    started = time.perf_counter()
    async with Client(params, mode="legacy") as client:
        start_ms = (time.perf_counter() - started) * 1000
        call_ms = []
        for index in range(calls):
            began = time.perf_counter()
            result = await client.call_tool("search_memories", {"query": f"{question} ({index})"})
            call_ms.append(round((time.perf_counter() - began) * 1000, 2))
            assert not result.is_error, result.content
    return {"start_ms": round(start_ms, 2), "call_ms": call_ms}


def startups(home: Path, project: Path, runs: int) -> dict[str, Any]:
    """`tap mcp` start-up times, and the first calls of the last session."""
    sessions = [asyncio.run(stdio_session(home, project, "what do we deploy on?", 2)) for _ in range(runs)]
    return {
        "start_ms": benchutil.summary_ms([s["start_ms"] for s in sessions]),
        "calls_ms_last_session": sessions[-1]["call_ms"],
    }


def python_floor(runs: int) -> dict[str, Any]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        os.spawnv(os.P_WAIT, sys.executable, [sys.executable, "-c", "pass"])
        times.append((time.perf_counter() - started) * 1000)
    return {"wall_ms": benchutil.summary_ms(times)}


def run(args: argparse.Namespace) -> dict[str, Any]:
    questions = corpus.queries(args.queries, seed=4242)
    with tempfile.TemporaryDirectory(prefix="tap-bench-mcp-") as tmp:
        home, project = Path(tmp) / "home", Path(tmp) / "project"
        (project / ".git").mkdir(parents=True)
        local = in_process(home, project, args.memories, questions)
        without_server = startups(home, project, args.startups)
        config = Path(tmp) / "tap.toml"
        config.write_text("")
        server = ServeProcess(home, config=config).start(timeout=120)
        try:
            http = asyncio.run(over_http(server.url, server.token, str(project), questions))
            with_server = startups(home, project, args.startups)
        finally:
            server.stop()
        floor = python_floor(max(3, args.startups))
    tool, round_trip = local["tool_ms"], http["search_ms"]
    return {
        "benchmark": "mcp",
        "machine": benchutil.machine(),
        "method": {
            "store": f"{args.memories} synthetic memories in one project scope (bench/corpus.py), "
            f"built in {local['build_s']} s; default config",
            "search": "search_memories (limit 10) over /mcp of a real tap serve from one MCP SDK client session: "
            "the request's round trip on loopback (server-side time + client + HTTP), tools/list on the same "
            "session as its baseline; in process, the tool's work against the search alone, interleaved",
            "startup": "`tap mcp` (the installed script) started by the SDK's stdio client, until its initialize "
            "answer; `python -c pass` as the floor",
            "load": "other jobs may share the 2 cores: compare the ratios, measured in the same run",
        },
        "targets": TARGETS,
        "in_process": local,
        "http": http,
        "stdio_without_server": without_server,
        "stdio_with_server": with_server,
        "python_floor": floor,
        "verdict": {
            "server_side_p50_ms": tool["p50"],
            "server_side_p95_ms": tool["p95"],
            "round_trip_p50_ms": round_trip["p50"],
            "round_trip_p95_ms": round_trip["p95"],
            "round_trip_over_list_tools_p50": round(round_trip["p50"] / max(http["list_tools_ms"]["p50"], 0.01), 2),
            "tool_over_search_p50": round(tool["p50"] / max(local["search_ms"]["p50"], 0.01), 2),
            "stdio_start_p50_ms": with_server["start_ms"]["p50"],
            "stdio_start_over_python_floor_p50": round(
                with_server["start_ms"]["p50"] / max(floor["wall_ms"]["p50"], 0.01), 1
            ),
            "meets": {
                "server_side_p50": tool["p50"] <= TARGETS["search_p50_ms"],
                "server_side_p95": tool["p95"] <= TARGETS["search_p95_ms"],
                "round_trip_p50": round_trip["p50"] <= TARGETS["search_p50_ms"],
                "round_trip_p95": round_trip["p95"] <= TARGETS["search_p95_ms"],
            },
        },
    }


def print_report(result: dict[str, Any]) -> None:
    rows = [
        ["search alone (in process)", *_cells(result["in_process"]["search_ms"])],
        ["search_memories tool (in process)", *_cells(result["in_process"]["tool_ms"])],
        ["tools/list over /mcp", *_cells(result["http"]["list_tools_ms"])],
        ["search_memories over /mcp", *_cells(result["http"]["search_ms"])],
        ["python -c pass", *_cells(result["python_floor"]["wall_ms"])],
        ["tap mcp start (no server)", *_cells(result["stdio_without_server"]["start_ms"])],
        ["tap mcp start (server running)", *_cells(result["stdio_with_server"]["start_ms"])],
    ]
    print(benchutil.table(["ms", "n", "p50", "p95", "max"], rows))
    print(f"first calls through tap mcp, no server: {result['stdio_without_server']['calls_ms_last_session']} ms")
    print(f"first calls through tap mcp, relayed:   {result['stdio_with_server']['calls_ms_last_session']} ms")
    print(f"verdict: {json.dumps(result['verdict'])}")


def _cells(summary: dict[str, float]) -> list[object]:
    return [int(summary["n"]), summary["p50"], summary["p95"], summary["max"]]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--startups", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="tiny run (smoke test)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.quick:
        args.memories, args.queries, args.startups = 300, 8, 1
    result = run(args)
    print_report(result)
    path = benchutil.write_result("mcp", result, args.out)
    print(f"written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
