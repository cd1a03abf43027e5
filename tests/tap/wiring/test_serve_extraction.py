"""The extraction pipeline inside a real `tap serve` process: ingest over HTTP, crash, restart."""

from __future__ import annotations

import json
import signal
import sqlite3
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from testkit.serve_process import ServeProcess
from testkit.upstreams import FakeOllama
from testkit.waits import until

pytestmark = pytest.mark.slow  # starts other processes (see pyproject.toml: markers)

CONVERSATION = {
    "scope": "ana",
    "conversation": "trip",
    "source": "hook",
    "messages": [
        {
            "role": "user",
            "content": "I am flying to Tokyo on 3 March for the Kubernetes conference.",
            "id": "u1",
            "name": "Ana",
            "timestamp": 1_700_000_000,
        },
        {"role": "assistant", "content": "Have a great trip to Tokyo!", "id": "a1", "timestamp": 1_700_000_010},
    ],
}


def call(server: ServeProcess, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(server.url + path, data=data, method=method)
    req.add_header("Authorization", f"Bearer {server.token}")
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def chunk_states(home: Path) -> list[str]:
    with sqlite3.connect(home / "queue.db") as db:
        return [row[0] for row in db.execute("SELECT state FROM chunks")]


async def test_ingest_endpoint_validates_and_queues(isolated_home: Path) -> None:
    server = ServeProcess(isolated_home).start()
    try:
        assert call(server, "POST", "/tap/ingest", {"scope": "ana"})[0] == 400
        assert call(server, "POST", "/tap/ingest", {**CONVERSATION, "source": "fax"})[0] == 400
        status, body = call(server, "POST", "/tap/ingest", CONVERSATION)
        assert status == 202 and body["queued"] == 2
        assert call(server, "POST", "/tap/ingest", CONVERSATION)[1]["queued"] == 0
        status, doc = call(server, "GET", "/tap/status")
        assert status == 200 and "extraction" in doc and doc["extraction"]["queue"]["turns_waiting"] == 2
        lag = await until(lambda: (got := call(server, "GET", "/tap/status")[1]["event_loop_lag"])["samples"] and got)
        assert 0 <= lag["p50_ms"] <= lag["p99_ms"] <= lag["max_ms"]
    finally:
        server.stop()


async def test_kill_9_mid_extraction_loses_nothing(isolated_home: Path, tmp_path: Path) -> None:
    async with FakeOllama() as llm:
        config = tmp_path / "tap.toml"
        config.write_text(
            f'[extract]\nprovider = "ollama"\nollama_url = "{llm.url}"\nflush_after_s = 0.0\n'
            "timeout_s = 60.0\nbackoff_s = 0.1\n"
        )
        llm.reply_content({"memories": []}, latency=120)  # the first extraction hangs until we kill tap
        answer = {
            "memories": [
                {
                    "content": "Ana flies to Tokyo on 3 March for the Kubernetes conference",
                    "kind": "plan",
                    "importance": 4,
                    "tags": ["travel"],
                    "turn_ids": ["u1"],
                }
            ]
        }
        llm.reply_content(answer)
        server = ServeProcess(isolated_home, config=config).start()
        try:
            assert call(server, "POST", "/tap/ingest", CONVERSATION)[0] == 202
            await until(lambda: len(llm.requests) == 1, what="the first extraction request")
            assert chunk_states(isolated_home) == ["running"]
        finally:
            server.stop(sig=signal.SIGKILL)
        server = ServeProcess(isolated_home, config=config).start()
        try:
            await until(lambda: chunk_states(isolated_home) == ["done"], what="the chunk extracted after the restart")
            status, listed = call(server, "GET", "/tap/memories?scope=ana")
        finally:
            server.stop()
    contents = [m["content"] for m in listed["memories"]]
    assert contents.count("Ana flies to Tokyo on 3 March for the Kubernetes conference") == 1
    plan = next(m for m in listed["memories"] if m["kind"] == "plan")
    assert plan["sources"] == ["u1"] and plan["source"] == "hook"
    assert len(llm.requests) == 2
