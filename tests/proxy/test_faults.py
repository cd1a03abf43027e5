"""Bad input and faults through the proxy: each says what is wrong and loses nothing.

No test here measures time: a deadline is shown by an embedder that does not return until the
test lets it, a timeout by the error that names it (timings live in bench/proxy.py)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import aiohttp

from tap.runtime.tasks import running_tasks
from testkit.chroma_server import free_port
from testkit.upstreams import FakeAnthropic, FakeOllama, load_transcript
from testkit.waits import until
from tests.proxy.harness import TapProxy, hold_embedder

H = {"x-api-key": "sk-ant-1", "anthropic-version": "2023-06-01"}


def ask(text: str, **extra: Any) -> dict[str, Any]:
    return {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": text}], **extra}


async def post(
    url: str, payload: Any = None, *, data: bytes | None = None, headers: dict[str, str] | None = None
) -> tuple[int, bytes, Any]:
    body = data if data is not None else json.dumps(payload).encode()
    async with aiohttp.ClientSession() as s, s.post(url, data=body, headers={**H, **(headers or {})}) as r:
        return r.status, await r.read(), r.headers


async def test_refused_upstream_is_a_502_in_the_dialect_shape(isolated_home: Path) -> None:
    async with TapProxy(isolated_home, anthropic=f"http://127.0.0.1:{free_port()}") as tap:
        status, raw, _ = await post(tap.url + "/v1/messages", ask("hi"))
    assert status == 502
    error = json.loads(raw)
    assert error["type"] == "error" and "unreachable" in error["error"]["message"]


async def test_hanging_upstream_is_a_504_within_the_timeout(isolated_home: Path) -> None:
    async with FakeOllama() as up, TapProxy(isolated_home, ollama=up.url, read_timeout=0.3) as tap:
        up.next_response(hang=True)
        status, raw, _ = await post(
            tap.url + "/api/chat", {"model": "m", "messages": [{"role": "user", "content": "x"}]}
        )
        hung = len(up.requests)
    assert status == 504 and hung == 1  # the upstream got the request and never answered
    assert "did not answer in time" in json.loads(raw)["error"]


async def test_error_event_mid_stream_passes_through_and_partial_reply_is_captured(
    isolated_home: Path,
) -> None:
    async with FakeAnthropic() as up, TapProxy(isolated_home, anthropic=up.url) as tap:
        up.next_response(transcript="anthropic_error.sse")
        status, raw, _ = await post(tap.url + "/v1/messages", ask("tell me a story", stream=True))
        await tap.settle()
        logged = tap.turn_log.recent() if tap.turn_log else []
    assert status == 200 and raw == load_transcript("anthropic_error.sse")
    (exchange,) = logged
    assert exchange.user_text == "tell me a story" and exchange.error and not exchange.complete
    assert [m.role for m in tap.events[0].messages][0] == "user"


async def test_upstream_dropping_mid_stream_truncates_and_capture_keeps_what_arrived(
    isolated_home: Path,
) -> None:
    transcript = load_transcript("anthropic_stream.sse")
    async with FakeAnthropic() as up, TapProxy(isolated_home, anthropic=up.url) as tap:
        up.next_response(transcript="anthropic_stream.sse", drop_after=len(transcript) // 2)
        async with (
            aiohttp.ClientSession() as s,
            s.post(tap.url + "/v1/messages", json=ask("go", stream=True), headers=H) as r,
        ):
            got = b""
            try:
                async for chunk in r.content.iter_any():
                    got += chunk
            except aiohttp.ClientPayloadError:
                pass
        await tap.settle()
        logged = tap.turn_log.recent() if tap.turn_log else []
    assert transcript.startswith(got) and len(got) < len(transcript)
    (exchange,) = logged
    assert not exchange.complete and exchange.error


async def test_client_disconnect_cancels_upstream_and_leaks_nothing(isolated_home: Path) -> None:
    async with FakeAnthropic(delay=0.05) as up, TapProxy(isolated_home, anthropic=up.url) as tap:
        async with aiohttp.ClientSession() as s:
            r = await s.post(tap.url + "/v1/messages", json=ask("long answer please", stream=True), headers=H)
            await r.content.read(40)
            r.close()
        turn_log = tap.turn_log
        assert turn_log is not None
        await until(lambda: turn_log.recent(), what="the cut-off exchange in the turn log")
        await tap.settle()
        logged = turn_log.recent()
        leaked = [t for t in running_tasks() if not t.done()]
    (exchange,) = logged
    assert not exchange.complete and exchange.error == "client disconnected"
    assert leaked == []


async def test_malformed_json_is_forwarded_untouched(isolated_home: Path) -> None:
    async with FakeAnthropic() as up, TapProxy(isolated_home, anthropic=up.url) as tap:
        status, raw, headers = await post(tap.url + "/v1/messages", data=b'{"model": "m", "messages": [')
    assert up.requests[0].body == b'{"model": "m", "messages": ['
    assert status == 400 and json.loads(raw)["type"] == "error"
    assert headers["x-tap-degraded"] == "unparsable-request"


async def test_store_failure_degrades_but_the_request_succeeds(isolated_home: Path) -> None:
    async with FakeAnthropic() as up, TapProxy(isolated_home, anthropic=up.url, real_store=True) as tap:
        tap.remember("The user likes jazz")
        assert tap.rt is not None
        tap.rt.store._lexical.close()
        status, _, headers = await post(tap.url + "/v1/messages", ask("play some jazz"))
        snapshot = tap.ctx.status()
    assert status == 200 and headers["x-tap-degraded"] == "recall-error"
    assert up.requests[0].json() == ask("play some jazz")
    assert snapshot["degraded"] == {"recall-error": 1}


async def test_slow_recall_hits_the_deadline_and_forwards_unchanged(isolated_home: Path) -> None:
    deadline = "[recall]\ndeadline_ms = 150"
    async with FakeAnthropic() as up, TapProxy(isolated_home, extra_toml=deadline, anthropic=up.url) as tap:
        assert tap.rt is not None
        release = threading.Event()
        hold_embedder(tap.rt.embedder, release)
        try:
            status, _, headers = await post(tap.url + "/v1/messages", ask("hello"))
        finally:
            release.set()
    assert status == 200 and headers["x-tap-degraded"].startswith("recall-deadline")
    assert up.requests[0].json() == ask("hello")


async def test_no_memory_header_skips_recall_and_capture(isolated_home: Path) -> None:
    async with FakeAnthropic() as up, TapProxy(isolated_home, anthropic=up.url) as tap:
        tap.remember("The user likes jazz")
        await post(tap.url + "/v1/messages", ask("jazz?"), headers={"x-tap-no-memory": "1"})
        await tap.settle()
    assert up.requests[0].json() == ask("jazz?") and tap.events == []


async def test_a_tool_result_step_gets_the_human_turns_block_and_is_not_a_new_human_turn(
    isolated_home: Path,
) -> None:
    async with FakeAnthropic() as up, TapProxy(isolated_home, anthropic=up.url) as tap:
        tap.remember("The user likes jazz")
        result = {"type": "tool_result", "tool_use_id": "t1", "content": "jazz"}
        payload = {
            "model": "m",
            "max_tokens": 5,
            "messages": [
                {"role": "user", "content": "jazz?"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t1", "name": "s", "input": {}}],
                },
                {"role": "user", "content": [result]},
            ],
        }
        await post(tap.url + "/v1/messages", payload)
        await tap.settle()
    sent = up.requests[0].json()
    assert sent["messages"][:2] == payload["messages"][:2]
    first, block = sent["messages"][2]["content"]
    assert first == result and "The user likes jazz" in block["text"] and "cache_control" not in block
    (event,) = tap.events
    assert [m.role for m in event.messages] == ["assistant"]  # the step's reply; no new human turn


async def test_scope_by_api_key_isolates_users_and_ignores_the_header(isolated_home: Path) -> None:
    from tap.intercept.scopes import key_fingerprint

    async with (
        FakeAnthropic() as up,
        TapProxy(isolated_home, anthropic=up.url, extra_toml="[proxy]\nscope_by_api_key = true") as tap,
    ):
        tap.remember("Alice's door code hint is the moon", scope=key_fingerprint("sk-alice"))
        await post(tap.url + "/v1/messages", ask("door code hint?"), headers={"x-api-key": "sk-alice"})
        await post(
            tap.url + "/v1/messages",
            ask("door code hint?"),
            headers={"x-api-key": "sk-bob", "x-tap-scope": key_fingerprint("sk-alice")},
        )
        await tap.settle()
    alice, bob = (r.json()["messages"][-1]["content"] for r in up.requests)
    assert "moon" in json.dumps(alice) and bob == "door code hint?"
    assert {e.scope for e in tap.events} == {key_fingerprint("sk-alice"), key_fingerprint("sk-bob")}
    assert "sk-alice" not in json.dumps([e.scope for e in tap.events])


async def test_count_tokens_counts_the_block_and_models_pass_through(isolated_home: Path) -> None:
    async with FakeAnthropic() as up, TapProxy(isolated_home, anthropic=up.url) as tap:
        tap.remember("The user likes jazz")
        raw = json.dumps(ask("jazz?")).encode()
        status, _, _ = await post(tap.url + "/v1/messages/count_tokens", data=raw)
        async with aiohttp.ClientSession() as s, s.get(tap.url + "/v1/models?limit=5", headers=H) as r:
            models = await r.json()
    counted = up.requests[0].json()["messages"][-1]["content"]  # as /v1/messages would send it
    assert status == 200 and counted[0] == {"type": "text", "text": "jazz?"} and "likes jazz" in counted[1]["text"]
    assert up.requests[1].path == "/v1/models" and up.requests[1].query == "limit=5"
    assert models["data"][0]["type"] == "model"


async def test_large_bodies_pass(isolated_home: Path) -> None:
    big = "x" * (32 * 1024 * 1024)
    async with FakeAnthropic() as up, TapProxy(isolated_home, anthropic=up.url) as tap:
        tap.remember("The user likes jazz")
        payload = {
            "model": "m",
            "max_tokens": 5,
            "messages": [
                {"role": "user", "content": big},
                {"role": "assistant", "content": "ok"},
                {"role": "user", "content": "jazz please"},
            ],
        }
        status, _, headers = await post(tap.url + "/v1/messages", payload)
    assert status == 200 and headers["x-tap-recalled"] == "1"
    sent = up.requests[0].json()
    assert sent["messages"][0]["content"] == big


async def test_a_large_body_is_parsed_off_the_event_loop(isolated_home: Path, monkeypatch: Any) -> None:
    import threading

    from tap.intercept.core import LARGE_BODY_BYTES
    from tap.intercept.dialects.registry import ANTHROPIC

    threads: list[str] = []
    parse = ANTHROPIC.parse_request

    def recording(body: bytes) -> Any:
        threads.append(threading.current_thread().name)
        return parse(body)

    monkeypatch.setattr(ANTHROPIC, "parse_request", recording)
    async with FakeAnthropic() as up, TapProxy(isolated_home, anthropic=up.url) as tap:
        tap.remember("The user likes jazz")
        for text in ("jazz please", "jazz please " + "x" * LARGE_BODY_BYTES):
            status, _, headers = await post(tap.url + "/v1/messages", ask(text))
            assert status == 200 and headers["x-tap-recalled"] == "1"
    loop_thread = threading.current_thread().name
    assert threads[0] == loop_thread and threads[1] != loop_thread
    assert [r.json()["messages"][-1]["content"][0]["text"][:11] for r in up.requests] == ["jazz please"] * 2


def test_a_large_text_is_scrubbed_in_a_helper_process_with_the_same_result() -> None:
    from tap.scrub import LARGE_TEXT, scrub, scrub_here

    text = "my password is hunter2 and the key sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123 ok. " * (LARGE_TEXT // 60)
    assert len(text) > LARGE_TEXT
    assert scrub(text) == scrub_here(text) and "hunter2" not in scrub(text)
