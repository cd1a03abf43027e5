"""A scripted OpenAI-compatible model for smoke runs of the LLM path, in its own process.

``python bench/fake_llm.py FIXTURE PORT_FILE`` serves ``POST /v1/chat/completions`` on 127.0.0.1 (a
free port, written to PORT_FILE) and answers tap's three requests from FIXTURE (a JSON file with a
``memories`` list, each memory as tap's extraction schema has it, citing turn ids):
- ``record_memories``: the fixture's memories citing a turn of the excerpt (cited turns cut to the
  excerpt's), so each chunk gets what a careful model would extract from it;
- ``gate_verdict``: worth remembering when some fixture memory cites a turn of the excerpt;
- ``reconcile_memories`` (``[extract] reconcile = "llm"``): ``add`` for every candidate.
It reads which of the three is asked from the request (``response_format``'s schema name, the forced
function's name, or the system prompt) and answers the way it was asked: a function call for
``tools``, the JSON object as the message content otherwise, in the real wire format
(testkit/wire.py). It is no model: a benchmark run against it measures tap's side of the LLM path
(annotations through reconcile, recall), never a model's extraction.

    ./dev bench quality --quick --config my-fake.toml   # [extract] provider = "openai",
                                                        # openai_url = "http://127.0.0.1:PORT/v1"
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any

from aiohttp import web

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as `python bench/fake_llm.py`: tests/ sits beside bench/
    sys.path.insert(0, str(ROOT))

from testkit.wire import openai_completion, openai_error  # noqa: E402

NAMES = ("gate_verdict", "record_memories", "reconcile_memories")
_TURN = re.compile(r"^\[([^\]\s]+)\] ", re.MULTILINE)
_CANDIDATE = re.compile(r"^\[(\d+)\] \(", re.MULTILINE)


def asked_for(payload: dict[str, Any]) -> str:
    """Which of tap's three objects the request asks for ('' when none)."""
    schema = (payload.get("response_format") or {}).get("json_schema") or {}
    if schema.get("name") in NAMES:
        return str(schema["name"])
    for tool in payload.get("tools") or []:
        if (tool.get("function") or {}).get("name") in NAMES:
            return str(tool["function"]["name"])
    system = next((m.get("content", "") for m in payload.get("messages", []) if m.get("role") == "system"), "")
    return next((name for name in NAMES if f"a {name} object" in system), "")


def answer(name: str, user: str, memories: list[dict[str, Any]]) -> dict[str, Any]:
    """The object for one request, from the fixture."""
    if name == "reconcile_memories":
        decisions = [
            {"candidate": int(i), "action": "add", "target": "", "content": ""} for i in _CANDIDATE.findall(user)
        ]
        return {"decisions": decisions}
    turns = set(_TURN.findall(user.split("<conversation>", 1)[-1]))
    found = []
    for memory in memories:
        cited = [turn for turn in memory["turn_ids"] if turn in turns]
        if cited:
            found.append({**memory, "turn_ids": cited})
    if name == "gate_verdict":
        return {"worth": bool(found), "reason": f"{len(found)} labelled statements" if found else "nothing labelled"}
    return {"memories": found}


def make_app(memories: list[dict[str, Any]]) -> web.Application:
    """The fake's aiohttp application."""

    async def completions(request: web.Request) -> web.Response:
        try:
            payload = await request.json()
            name = asked_for(payload)
            user = next(m["content"] for m in payload["messages"] if m.get("role") == "user")
        except (ValueError, KeyError, StopIteration, AttributeError, TypeError):
            return web.json_response(openai_error("not a chat completions request tap would send"), status=400)
        if not name:
            return web.json_response(openai_error("the fixture answers only tap's three requests"), status=400)
        value = json.dumps(answer(name, user, memories))
        model = str(payload.get("model", "fake"))
        usage = {"prompt_tokens": len(user) // 4, "completion_tokens": len(value) // 4}
        if payload.get("tools"):
            return web.json_response(
                openai_completion(
                    None, tool_calls=[(name, value)], finish_reason="tool_calls", usage=usage, model=model
                )
            )
        return web.json_response(openai_completion(value, usage=usage, model=model))

    app = web.Application()
    app.add_routes([web.post("/v1/chat/completions", completions)])
    return app


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("fixture", type=Path, help="JSON file with a `memories` list")
    parser.add_argument("port_file", type=Path, help="where to write the port it listens on")
    args = parser.parse_args(argv)
    memories = json.loads(args.fixture.read_text())["memories"]

    async def serve() -> None:
        runner = web.AppRunner(make_app(memories), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        await asyncio.to_thread(args.port_file.write_text, str(port))
        print(f"fake model at http://127.0.0.1:{port}/v1 ({len(memories)} fixture memories)", flush=True)
        await asyncio.Event().wait()

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
