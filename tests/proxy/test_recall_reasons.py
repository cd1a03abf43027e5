"""Every memory request says what became of recall: it ran (`x-tap-recall-ms`) or why not (`x-tap-degraded`).

A request that goes out without memories and without a reason is a silent failure (Claude Code's
first prompt of every session did that: a trailing system message hid its human turn). Each path
on which tap does not recall is driven here through the proxy, and every response is held to the
invariant: exactly one of the two headers.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tap.intercept.core import DEGRADED_HEADER, RECALL_MS_HEADER
from testkit.upstreams import FakeAnthropic, FakeOllama, FakeOpenAI
from tests.proxy.harness import TapProxy, hold_embedder

H = {"x-api-key": "sk-ant-1", "anthropic-version": "2023-06-01", "content-type": "application/json"}
IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
TOOL_USE = {"type": "tool_use", "id": "t1", "name": "ls", "input": {}}
TOOL_RESULT = {"type": "tool_result", "tool_use_id": "t1", "content": "a.txt"}


def ask(*messages: dict[str, Any], **extra: Any) -> bytes:
    return json.dumps({"model": "m", "max_tokens": 10, "messages": list(messages), **extra}).encode()


def user(content: Any) -> dict[str, Any]:
    return {"role": "user", "content": content}


def assistant(content: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


def system(content: Any) -> dict[str, Any]:
    return {"role": "system", "content": content}


async def post(url: str, raw: bytes, headers: dict[str, str] | None = None) -> Any:
    async with aiohttp.ClientSession() as s, s.post(url, data=raw, headers={**H, **(headers or {})}) as r:
        await r.read()
        return r.headers


def outcome(headers: Any) -> str:
    """ "ran" or the degraded reason; fails when a response says both or neither."""
    ran, why = RECALL_MS_HEADER in headers, headers.get(DEGRADED_HEADER)
    assert ran != (why is not None), f"recall-ms={headers.get(RECALL_MS_HEADER)} degraded={why}"
    return "ran" if ran else str(why)


ANTHROPIC_CASES: dict[str, tuple[bytes, dict[str, str], str]] = {
    "a human turn": (ask(user("what is my cat called?")), {}, "ran"),
    "a human turn, then system notes": (ask(user("what is my cat called?"), system("cwd: /x")), {}, "ran"),
    "a tool step": (ask(user("list"), assistant([TOOL_USE]), user([TOOL_RESULT])), {}, "ran"),
    "a tool step, then system notes": (
        ask(user("list"), assistant([TOOL_USE]), user([TOOL_RESULT]), system("note")),
        {},
        "ran",
    ),
    "no memory asked for": (ask(user("hi")), {"x-tap-no-memory": "1"}, "no-memory-requested"),
    "not JSON": (b'{"model": "m", "messages": [', {}, "unparsable-request"),
    "an assistant prefill": (ask(user("hi"), assistant("Sure")), {}, "no-human-turn"),
    "system notes after a reply": (ask(user("hi"), assistant("Sure"), system("x")), {}, "no-human-turn"),
    "only an image": (ask(user([IMAGE])), {}, "no-human-turn"),
    "no messages": (ask(), {}, "no-human-turn"),
    "only system notes": (ask(system("x")), {}, "no-human-turn"),
    "messages not a list": (json.dumps({"model": "m", "messages": "hi"}).encode(), {}, "no-human-turn"),
    "only tool results": (ask(user([TOOL_RESULT])), {}, "no-human-turn"),
}


@pytest.mark.parametrize("case", list(ANTHROPIC_CASES))
async def test_every_anthropic_request_says_what_became_of_recall(isolated_home: Path, case: str) -> None:
    raw, headers, expected = ANTHROPIC_CASES[case]
    async with FakeAnthropic() as up, TapProxy(isolated_home, anthropic=up.url) as tap:
        tap.remember("The user's cat is called Miso")
        for path in ("/v1/messages", "/v1/messages/count_tokens"):
            assert outcome(await post(tap.url + path, raw, headers)) == expected, path


async def test_the_other_dialects_say_it_too(isolated_home: Path) -> None:
    async with (
        FakeOpenAI() as openai,
        FakeOllama() as ollama,
        TapProxy(isolated_home, openai=openai.url, ollama=ollama.url) as tap,
    ):
        chat = {"model": "m", "messages": [{"role": "user", "content": "hi"}, {"role": "developer", "content": "d"}]}
        prefill = {"model": "m", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "S"}]}
        responses = {"model": "m", "input": [{"role": "user", "content": "hi"}, {"role": "developer", "content": "d"}]}
        cases = [
            ("/v1/chat/completions", chat, "ran"),
            ("/v1/chat/completions", prefill, "no-human-turn"),
            ("/v1/responses", responses, "ran"),
            ("/v1/responses", {"model": "m", "input": []}, "no-human-turn"),
            ("/api/chat", {"model": "m", "messages": [chat["messages"][0], {"role": "system", "content": "s"}]}, "ran"),
            ("/api/generate", {"model": "m", "prompt": "def f(", "suffix": "return 1"}, "no-human-turn"),
        ]
        for path, payload, expected in cases:
            assert outcome(await post(tap.url + path, json.dumps(payload).encode())) == expected, (path, payload)


async def test_injection_switched_off_says_so(isolated_home: Path) -> None:
    for toml in ("[proxy]\ninject = false", "[proxy]\ninject = false\ncapture = false"):
        async with FakeAnthropic() as up, TapProxy(isolated_home, extra_toml=toml, anthropic=up.url) as tap:
            assert outcome(await post(tap.url + "/v1/messages", ask(user("hi")))) == "injection-off"


Fault = Callable[[TapProxy], Awaitable[None]]


@pytest.mark.parametrize("fault", ["embedder fails", "embedder too slow"])
async def test_a_failing_recall_says_why(isolated_home: Path, fault: str) -> None:
    toml = "[recall]\ndeadline_ms = 150" if fault == "embedder too slow" else ""
    async with FakeAnthropic() as up, TapProxy(isolated_home, extra_toml=toml, anthropic=up.url) as tap:
        assert tap.rt is not None
        release = threading.Event()
        if fault == "embedder too slow":
            hold_embedder(tap.rt.embedder, release)
        else:

            def broken(text: str) -> list[float]:
                raise RuntimeError("embedder down")

            tap.rt.embedder.embed_query = broken  # type: ignore[method-assign]
            tap.rt.embedder.embed_queries = lambda texts: [broken(t) for t in texts]  # type: ignore[attr-defined]
        try:
            why = outcome(await post(tap.url + "/v1/messages", ask(user("what is my cat called?"))))
        finally:
            release.set()
    assert why == ("recall-deadline-150ms" if fault == "embedder too slow" else "recall-error")
