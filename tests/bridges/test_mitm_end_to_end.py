"""tap's mitmproxy end to end: a real mitmproxy master on 127.0.0.1:0, TLS fake upstreams with a test
CA, real SDK clients that trust tap's generated CA (regular mode) or none (reverse mode)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import ssl
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

from testkit.upstreams import FakeAnthropic, FakeOllama, FakeOpenAI, load_transcript
from testkit.waits import until
from tests.bridges.mitm_harness import RunningMitm, TestCA
from tests.proxy.harness import TapProxy, hold_embedder
from tests.sdk import sdk

if TYPE_CHECKING:
    import anthropic
    import openai
else:
    anthropic = sdk("anthropic")
    openai = sdk("openai")

REPLY_TEXT = "Paint it teal — a calm colour for Zürich 🎨."


def interceptor(tap: TapProxy):  # type: ignore[no-untyped-def]
    return tap.ctx.interceptor


def stream_text(transcript: str, dialect: str) -> str:
    from tap.intercept.dialects import get_dialect

    parser = get_dialect(dialect).stream_parser()
    parser.feed(load_transcript(transcript))
    return parser.finish().text


@pytest.fixture
def certs(tmp_path: Path) -> TestCA:
    return TestCA.create(tmp_path / "certs")


@pytest.fixture(scope="module")
def made_ca(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A confdir in which tap's mitm CA was created once (an RSA key: ~0.1 s to generate)."""
    from bridges.mitm.ca import ensure_ca

    return ensure_ca(tmp_path_factory.mktemp("mitm-ca") / "mitm").confdir


@pytest.fixture
def mitm_dir(tmp_path: Path, made_ca: Path) -> Path:
    """This test's mitm confdir, holding a copy of the module's CA (the CA files the runner finds at
    start are what a second `tap serve` finds; creating one is tested where it is the point)."""
    return Path(shutil.copytree(made_ca, tmp_path / "mitm"))


async def test_regular_mode_sdk_streamed_and_not_with_tap_ca(
    isolated_home: Path, mitm_dir: Path, certs: TestCA, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with FakeAnthropic(tls=certs.server_context()) as up, TapProxy(isolated_home) as tap:
        tap.remember("The user plays the cello in an orchestra")
        async with RunningMitm(
            interceptor(tap), mitm_dir, hosts=[f"localhost:{up.port}"], upstream_ca=certs.ca_file
        ) as mitm:
            assert mitm.proxy.ca is not None
            # exactly what `tap mitm ca` tells a Python client to set
            monkeypatch.setenv("HTTPS_PROXY", mitm.proxy_url)
            monkeypatch.setenv("SSL_CERT_FILE", str(mitm.proxy.ca.bundle))
            for name in ("NO_PROXY", "no_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
                monkeypatch.delenv(name, raising=False)
            client = anthropic.AsyncAnthropic(base_url=f"https://localhost:{up.port}", api_key="sk-ant", max_retries=0)
            raw = await client.messages.with_raw_response.create(
                model="claude-haiku-4-5", max_tokens=64, messages=[{"role": "user", "content": "My instrument? cello"}]
            )
            whole = await raw.parse()
            async with client.messages.stream(
                model="claude-haiku-4-5",
                max_tokens=64,
                messages=[{"role": "user", "content": "Which orchestra instrument do I play, cello?"}],
            ) as stream:
                streamed = "".join([text async for text in stream.text_stream])
            await client.close()
            await tap.settle()
    whole_text = "".join(block.text for block in whole.content if block.type == "text")
    assert raw.headers["x-tap-recalled"] == "1" and whole_text
    assert streamed == stream_text("anthropic_stream.sse", "anthropic")
    for sent in up.requests:
        content = sent.json()["messages"][-1]["content"]
        assert "plays the cello" in content[-1]["text"], "the upstream saw the block"
        assert "sk-ant" in (sent.headers.get("x-api-key", "") + sent.headers.get("Authorization", ""))
        assert not any(h.lower().startswith("x-tap") for h in sent.headers)
    assert len(tap.events) == 2 and {e.source for e in tap.events} == {"mitm"}
    replies = sorted(e.messages[-1].content for e in tap.events)
    assert replies == sorted([streamed, whole_text])


async def test_regular_mode_client_gets_identical_bytes(isolated_home: Path, mitm_dir: Path, certs: TestCA) -> None:
    async with FakeOpenAI(tls=certs.server_context()) as up, TapProxy(isolated_home) as tap:
        tap.remember("The user's favourite colour is teal")
        async with RunningMitm(
            interceptor(tap), mitm_dir, hosts=[f"localhost:{up.port}"], upstream_ca=certs.ca_file
        ) as mitm:
            async with httpx.AsyncClient(proxy=mitm.proxy_url, verify=mitm.client_context()) as http:
                for path, payload, transcript in [
                    (
                        "/v1/responses",
                        {"model": "gpt-5.1", "stream": True, "input": "Which colour, teal?"},
                        "openai_responses.sse",
                    ),
                    (
                        "/v1/chat/completions",
                        {"model": "gpt-4o", "messages": [{"role": "user", "content": "teal colour?"}]},
                        "openai_completion.json",
                    ),
                ]:
                    r = await http.post(f"https://localhost:{up.port}{path}", json=payload)
                    assert r.status_code == 200 and r.content == load_transcript(transcript)
                    assert r.headers["x-tap-recalled"] == "1"
            await tap.settle()
    first, second = (r.json() for r in up.requests)
    assert "favourite colour is teal" in first["input"][0]["content"][1]["text"]
    assert "favourite colour is teal" in second["messages"][0]["content"][1]["text"]
    assert [e.messages[-1].content for e in tap.events][0] == REPLY_TEXT or len(tap.events) == 2


async def test_reverse_mode_needs_no_ca(isolated_home: Path, mitm_dir: Path, certs: TestCA) -> None:
    async with FakeOpenAI(tls=certs.server_context()) as up, TapProxy(isolated_home) as tap:
        tap.remember("The user lives in Zürich")
        async with RunningMitm(
            interceptor(tap),
            mitm_dir,
            hosts=[],
            upstream_ca=certs.ca_file,
            reverse=[f"https://localhost:{up.port}@0"],
            regular=False,
        ) as mitm:
            client = openai.AsyncOpenAI(base_url=mitm.reverse_url + "/v1", api_key="sk-o", max_retries=0)
            stream = await client.responses.create(model="gpt-5.1", input="Weather in Zürich?", stream=True)
            text = "".join([e.delta async for e in stream if e.type == "response.output_text.delta"])
            chat = await client.chat.completions.create(
                model="gpt-4o", messages=[{"role": "user", "content": "Where do I live? Zürich?"}]
            )
            models = await client.models.list()
            await client.close()
            await tap.settle()
    assert text == REPLY_TEXT and chat.choices[0].message.content
    assert [m.id for m in models.data] == ["gpt-4o-2024-08-06"]
    assert up.requests[0].headers["Host"] == f"localhost:{up.port}"
    assert "lives in Zürich" in json.dumps(up.requests[0].json()["input"], ensure_ascii=False)
    assert len(tap.events) == 2


async def test_regular_mode_passes_other_hosts_without_interception(
    isolated_home: Path, mitm_dir: Path, certs: TestCA
) -> None:
    async with (
        FakeAnthropic(tls=certs.server_context()) as api,
        FakeAnthropic(tls=certs.server_context()) as other,
        TapProxy(isolated_home) as tap,
    ):
        tap.remember("The user plays the cello")
        async with RunningMitm(
            interceptor(tap), mitm_dir, hosts=[f"localhost:{api.port}"], upstream_ca=certs.ca_file
        ) as mitm:
            body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "cello?"}]}
            # the other host's own certificate reaches the client: it verifies against the upstream CA only
            async with httpx.AsyncClient(proxy=mitm.proxy_url, verify=certs.client_context()) as http:
                passed = await http.post(f"https://127.0.0.1:{other.port}/v1/messages", json=body)
            # and tap's CA would not do for it
            async with httpx.AsyncClient(proxy=mitm.proxy_url, verify=mitm.client_context()) as http:
                with pytest.raises(httpx.ConnectError):
                    await http.post(f"https://127.0.0.1:{other.port}/v1/messages", json=body)
            assert mitm.proxy.addon is not None and mitm.proxy.addon.flows == 0
        await tap.settle()
    assert passed.status_code == 200 and "x-tap-recalled" not in passed.headers
    assert other.requests[0].json() == body, "not rewritten"
    assert tap.events == [] and api.requests == []


async def test_client_that_does_not_trust_the_ca_gets_a_clean_failure_and_one_log_line(
    isolated_home: Path, mitm_dir: Path, certs: TestCA, caplog: pytest.LogCaptureFixture
) -> None:
    async with FakeAnthropic(tls=certs.server_context()) as up, TapProxy(isolated_home) as tap:
        async with RunningMitm(
            interceptor(tap), mitm_dir, hosts=[f"localhost:{up.port}"], upstream_ca=certs.ca_file
        ) as mitm:
            with caplog.at_level(logging.INFO):
                async with httpx.AsyncClient(proxy=mitm.proxy_url, verify=ssl.create_default_context()) as http:
                    with pytest.raises(httpx.ConnectError):
                        await http.post(f"https://localhost:{up.port}/v1/messages", json={})
                await until(
                    lambda: any(r.levelno >= logging.WARNING for r in caplog.records), what="the TLS failure logged"
                )
                # the proxy still works for a client that trusts the CA
                async with httpx.AsyncClient(proxy=mitm.proxy_url, verify=mitm.client_context()) as http:
                    ok = await http.get(f"https://localhost:{up.port}/v1/models")
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(lines) == 1 and lines[0].startswith("mitm: TLS with a client for localhost failed")
    assert "tap mitm ca" in lines[0]
    assert ok.status_code == 200 and up.requests[-1].path == "/v1/models"


async def test_upstream_tls_error_is_one_line_and_a_clean_502(
    isolated_home: Path, mitm_dir: Path, certs: TestCA, caplog: pytest.LogCaptureFixture
) -> None:
    async with FakeAnthropic(tls=certs.server_context()) as up, TapProxy(isolated_home) as tap:
        # mitm is not told about the upstream's CA: the upstream certificate does not verify
        async with RunningMitm(
            interceptor(tap), mitm_dir, hosts=[], reverse=[f"https://localhost:{up.port}@0"], regular=False
        ) as mitm:
            with caplog.at_level(logging.INFO):
                client = anthropic.AsyncAnthropic(base_url=mitm.reverse_url, api_key="sk", max_retries=0)
                with pytest.raises(anthropic.APIStatusError) as failed:
                    await client.messages.create(
                        model="m", max_tokens=5, messages=[{"role": "user", "content": "hello there"}]
                    )
                await client.close()
        await tap.settle()
    assert failed.value.status_code == 502
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(lines) == 1 and lines[0].startswith("mitm: POST http") and "certificate" in lines[0].lower()
    assert tap.events == [] and up.requests == []


async def test_inside_tap_serve_mitm_runs_in_its_own_thread_and_calls_the_servers_core(
    isolated_home: Path, mitm_dir: Path, certs: TestCA
) -> None:
    from bridges.mitm.hosts import ReverseTarget
    from bridges.mitm.link import CoreLink
    from bridges.mitm.runner import MitmSettings, MitmThread

    async with FakeOpenAI(tls=certs.server_context()) as up, TapProxy(isolated_home) as tap:
        tap.remember("The user's favourite colour is teal")
        settings = MitmSettings(
            regular_port=None,
            reverse=(ReverseTarget.parse(f"https://localhost:{up.port}@0"),),
            confdir=mitm_dir,
            upstream_ca=str(certs.ca_file),
        )
        thread = MitmThread(settings, CoreLink(interceptor(tap), asyncio.get_running_loop()))
        (listening,) = await asyncio.to_thread(thread.start)
        try:
            async with httpx.AsyncClient() as http:
                payload = {"model": "gpt-5.1", "stream": True, "input": "Which colour, teal?"}
                r = await http.post(listening.url + "/v1/responses", json=payload)
                again = await http.post(listening.url + "/v1/responses", json=payload)  # a retry: same block
                assert again.status_code == 200
        finally:
            await asyncio.to_thread(thread.stop)
        await tap.settle()
    assert r.content == load_transcript("openai_responses.sse") and r.headers["x-tap-recalled"] == "1"
    first, second = (req.json()["input"] for req in up.requests)
    assert first == second and "favourite colour is teal" in first[0]["content"][1]["text"]
    assert interceptor(tap).status()["recalls"] >= 1 and thread.proxy.status()["flows"] == 2
    assert {e.source for e in tap.events} == {"mitm"}


async def test_slow_recall_degrades_through_mitm(isolated_home: Path, mitm_dir: Path, certs: TestCA) -> None:
    deadline = "[recall]\ndeadline_ms = 150"
    async with FakeAnthropic(tls=certs.server_context()) as up, TapProxy(isolated_home, extra_toml=deadline) as tap:
        assert tap.rt is not None
        release = threading.Event()
        hold_embedder(tap.rt.embedder, release)
        async with RunningMitm(
            interceptor(tap),
            mitm_dir,
            hosts=[],
            upstream_ca=certs.ca_file,
            reverse=[f"https://localhost:{up.port}@0"],
            regular=False,
        ) as mitm:
            body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hello"}]}
            try:
                async with httpx.AsyncClient() as http:
                    r = await http.post(mitm.reverse_url + "/v1/messages", json=body)
            finally:
                release.set()
    assert r.status_code == 200 and r.headers["x-tap-degraded"].startswith("recall-deadline")
    assert up.requests[0].json() == body


async def test_client_dropped_mid_stream(
    isolated_home: Path, mitm_dir: Path, certs: TestCA, caplog: pytest.LogCaptureFixture
) -> None:
    async with FakeAnthropic(tls=certs.server_context(), delay=0.01) as up, TapProxy(isolated_home) as tap:
        async with RunningMitm(
            interceptor(tap),
            mitm_dir,
            hosts=[],
            upstream_ca=certs.ca_file,
            reverse=[f"https://localhost:{up.port}@0"],
            regular=False,
        ) as mitm:
            port = int(mitm.reverse_url.rsplit(":", 1)[1])
            body = json.dumps(
                {"model": "m", "max_tokens": 5, "stream": True, "messages": [{"role": "user", "content": "hello"}]}
            ).encode()
            with caplog.at_level(logging.INFO):
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.write(
                    b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {len(body)}\r\n\r\n".encode()
                    + body
                )
                await writer.drain()
                head = await reader.readuntil(b"\r\n\r\n")
                await reader.read(200)  # a little of the stream, then the client goes away
                writer.close()
                turn_log = tap.turn_log
                assert turn_log is not None
                await until(lambda: turn_log.recent(), what="the cut-off exchange in the turn log")
                # mitm goes on serving
                async with httpx.AsyncClient() as http:
                    models = await http.get(mitm.reverse_url + "/v1/models")
            await tap.settle()
            assert tap.turn_log is not None
            (exchange,) = tap.turn_log.recent()
    assert head.startswith(b"HTTP/1.1 200") and models.status_code == 200
    assert not exchange.complete and exchange.error == "client disconnected"
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO and r.name == "tap.mitm"]
    assert len(lines) == 1 and "client went away" in lines[0]
    (event,) = tap.events
    assert event.messages[0].content == "hello"


async def test_reverse_mode_to_ollama_with_the_ollama_sdk(isolated_home: Path, mitm_dir: Path) -> None:
    import ollama

    async with FakeOllama() as up, TapProxy(isolated_home) as tap:
        tap.remember("The user's dog is called Pixel")
        async with RunningMitm(interceptor(tap), mitm_dir, hosts=[], reverse=[f"{up.url}@0"], regular=False) as mitm:
            client = ollama.AsyncClient(host=mitm.reverse_url)
            parts = [
                part.message.content
                async for part in await client.chat(
                    model="llama3.2",
                    messages=[{"role": "user", "content": "What is my dog called? Pixel?"}],
                    stream=True,
                )
            ]
            async with httpx.AsyncClient() as http:
                root = await http.get(mitm.reverse_url + "/")
            await tap.settle()
    assert "".join(parts) == stream_text("ollama_chat.ndjson", "ollama_chat")
    sent = up.requests[0].json()["messages"][0]["content"]
    assert sent.startswith("What is my dog called? Pixel?\n\n") and "called Pixel" in sent.split("\n\n", 1)[1]
    assert root.text == "Ollama is running" and len(tap.events) == 1


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
async def test_curl_through_regular_mode_with_tap_ca_and_bundle(
    isolated_home: Path, mitm_dir: Path, certs: TestCA
) -> None:
    async with FakeAnthropic(tls=certs.server_context()) as up, TapProxy(isolated_home) as tap:
        tap.remember("The user plays the cello")
        async with RunningMitm(
            interceptor(tap), mitm_dir, hosts=[f"localhost:{up.port}"], upstream_ca=certs.ca_file
        ) as mitm:
            assert mitm.proxy.ca is not None
            body = json.dumps(
                {"model": "m", "max_tokens": 9, "stream": True, "messages": [{"role": "user", "content": "cello?"}]}
            )
            url = f"https://localhost:{up.port}/v1/messages"
            common = ["curl", "-sS", "--noproxy", "", "-D", "-", "-H", "content-type: application/json", "-d", body]
            env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
            with_cert = await asyncio.create_subprocess_exec(
                *common,
                "--proxy",
                mitm.proxy_url,
                "--cacert",
                str(mitm.proxy.ca.cert),
                url,
                stdout=asyncio.subprocess.PIPE,
                env=env,
            )
            out, _ = await with_cert.communicate()
            with_env = await asyncio.create_subprocess_exec(
                *common,
                url,
                stdout=asyncio.subprocess.PIPE,
                env={**env, "HTTPS_PROXY": mitm.proxy_url, "CURL_CA_BUNDLE": str(mitm.proxy.ca.bundle)},
            )
            out2, _ = await with_env.communicate()
            await tap.settle()
    for raw in (out, out2):
        head, _, payload = raw.partition(b"\r\n\r\n")
        if head.startswith(b"HTTP/1.1 200 Connection established"):  # curl prints the CONNECT answer too
            head, _, payload = payload.partition(b"\r\n\r\n")
        assert b"x-tap-recalled: 1" in head.lower() and payload == load_transcript("anthropic_stream.sse")
    assert all("plays the cello" in r.json()["messages"][0]["content"][1]["text"] for r in up.requests)
