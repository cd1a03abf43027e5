"""Browser protection: what a web page can send is refused; what SDKs and curl send still works.

The browser requests are the ones Chromium sends for a form POST, a `fetch(..., {mode: "no-cors"})`
with a text/plain body, an `<img>` and a DNS-rebinding page (header names and values as sent).
The client requests come from the real SDKs (anthropic, openai, ollama) and the real `curl`.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import aiohttp
import ollama
import pytest

from proxy.guard import host_allowed, same_origin, split_host
from testkit.upstreams import FakeAnthropic, FakeOllama, FakeOpenAI
from tests.proxy.harness import TapProxy
from tests.sdk import sdk

if TYPE_CHECKING:
    import anthropic
    import openai
else:
    anthropic = sdk("anthropic")
    openai = sdk("openai")

EVIL = "https://evil.example"
CHAT = {"model": "llama3.2", "stream": False, "messages": [{"role": "user", "content": "I live in Porto."}]}

# A cross-site form POST (<form method=post enctype=text/plain action=http://127.0.0.1:8787/api/chat>).
FORM_POST = {
    "Origin": EVIL,
    "Content-Type": "text/plain",
    "Sec-Fetch-Site": "cross-site",
    "Sec-Fetch-Mode": "navigate",
    "Sec-Fetch-Dest": "document",
    "Sec-Fetch-User": "?1",
    "Upgrade-Insecure-Requests": "1",
    "Referer": EVIL + "/",
}
# fetch(url, {method: "POST", mode: "no-cors", body: JSON.stringify(...)}): text/plain, no preflight.
NO_CORS_FETCH = {
    "Origin": EVIL,
    "Content-Type": "text/plain;charset=UTF-8",
    "Sec-Fetch-Site": "cross-site",
    "Sec-Fetch-Mode": "no-cors",
    "Sec-Fetch-Dest": "empty",
}
# <img src="http://127.0.0.1:8787/v1/models">: no Origin, only Sec-Fetch-Site.
IMAGE = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "image"}


async def send(
    method: str, url: str, *, body: bytes = b"", headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    async with (
        aiohttp.ClientSession(skip_auto_headers=("Content-Type",)) as session,
        session.request(method, url, data=body, headers=headers or {}) as response,
    ):
        return response.status, dict(response.headers), await response.read()


def host_of(url: str) -> str:
    return url.split("//", 1)[1]


async def test_a_web_page_cannot_write_memories_through_any_chat_route(isolated_home: Path) -> None:
    async with (
        FakeAnthropic() as claude,
        FakeOpenAI() as gpt,
        FakeOllama() as llama,
        TapProxy(isolated_home, anthropic=claude.url, openai=gpt.url, ollama=llama.url) as tap,
    ):
        body = json.dumps(CHAT).encode()
        for path in ("/api/chat", "/api/generate", "/v1/messages", "/v1/chat/completions"):
            for headers in (FORM_POST, NO_CORS_FETCH):
                status, got, raw = await send("POST", tap.url + path, body=body, headers=headers)
                assert status == 403, (path, headers)
                assert "allowed_origins" in raw.decode()
                assert "Access-Control-Allow-Origin" not in got
        await tap.settle()
        assert tap.events == []
        assert claude.requests == gpt.requests == llama.requests == []


async def test_refusals_use_the_route_s_own_error_shape(isolated_home: Path) -> None:
    async with FakeAnthropic() as claude, FakeOllama() as llama:
        async with TapProxy(isolated_home, anthropic=claude.url, ollama=llama.url) as tap:
            _, _, anthropic_body = await send("POST", tap.url + "/v1/messages", headers=NO_CORS_FETCH)
            _, _, ollama_body = await send("POST", tap.url + "/api/chat", headers=NO_CORS_FETCH)
            _, _, admin_body = await send("GET", tap.url + "/tap/health", headers=IMAGE)
    assert json.loads(anthropic_body)["type"] == "error"
    assert json.loads(anthropic_body)["error"]["type"] == "permission_error"
    assert "error" in json.loads(ollama_body) and "error" in json.loads(admin_body)


async def test_dns_rebinding_host_is_refused_everywhere(isolated_home: Path) -> None:
    async with FakeOllama() as llama, TapProxy(isolated_home, ollama=llama.url) as tap:
        port = tap.url.rsplit(":", 1)[1]
        rebound = {
            "Host": f"rebind.evil.example:{port}",
            "Origin": f"http://rebind.evil.example:{port}",  # same origin, as far as the browser knows
            "Sec-Fetch-Site": "same-origin",
            "Sec-Fetch-Mode": "cors",
            "Content-Type": "application/json",
        }
        results = [
            await send("GET", tap.url + "/tap/memories", headers={**rebound, "Authorization": "Bearer test-token"}),
            await send("GET", tap.url + "/tap/health", headers=rebound),
            await send("POST", tap.url + "/api/chat", body=json.dumps(CHAT).encode(), headers=rebound),
            await send("GET", tap.url + "/ui", headers={"Host": f"rebind.evil.example:{port}"}),
        ]
    assert [status for status, _, _ in results] == [403, 403, 403, 403]
    assert "allowed_hosts" in results[0][2].decode()
    assert llama.requests == []


async def test_a_cross_site_image_or_link_is_refused(isolated_home: Path) -> None:
    async with FakeOpenAI() as gpt, TapProxy(isolated_home, openai=gpt.url) as tap:
        status, _, _ = await send("GET", tap.url + "/v1/models", headers=IMAGE)
        link = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
        ui_status, _, _ = await send("GET", tap.url + "/ui", headers=link)
        typed_status, _, page = await send("GET", tap.url + "/ui", headers={**link, "Sec-Fetch-Site": "none"})
    assert (status, ui_status, typed_status) == (403, 403, 200) and b"<html" in page.lower()
    assert gpt.requests == []


async def test_options_is_answered_locally_without_cors(isolated_home: Path) -> None:
    async with FakeOpenAI() as gpt, TapProxy(isolated_home, openai=gpt.url) as tap:
        preflight = {
            "Origin": EVIL,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type,authorization",
            "Sec-Fetch-Site": "cross-site",
            "Sec-Fetch-Mode": "cors",
        }
        foreign = await send("OPTIONS", tap.url + "/v1/chat/completions", headers=preflight)
        plain = await send("OPTIONS", tap.url + "/v1/models")
    assert foreign[0] == 403 and plain[0] == 204
    assert not any(name.lower().startswith("access-control-") for name in {**foreign[1], **plain[1]})
    assert "POST" in plain[1]["Allow"]
    assert gpt.requests == []  # never forwarded


async def test_the_ui_page_itself_may_call_the_admin_api(isolated_home: Path) -> None:
    async with TapProxy(isolated_home) as tap:
        tap.remember("The user keeps bees", scope="ann")
        own = {
            "Origin": tap.url,
            "Sec-Fetch-Site": "same-origin",
            "Sec-Fetch-Mode": "cors",
            "Authorization": "Bearer test-token",
            "Content-Type": "application/json",
        }
        status, _, body = await send(
            "POST", tap.url + "/tap/recall", body=b'{"text": "bees", "scope": "ann"}', headers=own
        )
        other_port = tap.url.rsplit(":", 1)[0] + ":3000"
        refused, _, _ = await send("GET", tap.url + "/tap/memories", headers={**own, "Origin": other_port})
    assert status == 200 and "bees" in json.loads(body)["block"]
    assert refused == 403  # another local web server is another origin


async def test_an_allowed_origin_gets_cors(isolated_home: Path) -> None:
    app_origin = "http://localhost:3000"
    toml = f'[server]\nallowed_origins = ["{app_origin}"]'
    async with FakeOllama() as llama, TapProxy(isolated_home, ollama=llama.url, extra_toml=toml) as tap:
        ask = {"Origin": app_origin, "Access-Control-Request-Method": "POST", "Sec-Fetch-Site": "cross-site"}
        preflight = await send(
            "OPTIONS", tap.url + "/api/chat", headers={**ask, "Access-Control-Request-Headers": "content-type"}
        )
        status, headers, _ = await send(
            "POST",
            tap.url + "/api/chat",
            body=json.dumps(CHAT).encode(),
            headers={"Origin": app_origin, "Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"},
        )
        await tap.settle()
    assert preflight[0] == 204 and preflight[1]["Access-Control-Allow-Origin"] == app_origin
    assert preflight[1]["Access-Control-Allow-Headers"] == "content-type"
    assert status == 200 and headers["Access-Control-Allow-Origin"] == app_origin
    assert len(llama.requests) == 1


async def test_a_configured_host_name_is_answered(isolated_home: Path) -> None:
    toml = '[server]\nallowed_hosts = ["tap.internal"]'
    async with TapProxy(isolated_home, extra_toml=toml) as tap:
        port = tap.url.rsplit(":", 1)[1]
        named, _, _ = await send("GET", tap.url + "/tap/health", headers={"Host": f"tap.internal:{port}"})
        other, _, _ = await send("GET", tap.url + "/tap/health", headers={"Host": f"tap.external:{port}"})
        local, _, _ = await send("GET", tap.url + "/tap/health", headers={"Host": f"localhost:{port}"})
    assert (named, other, local) == (200, 403, 200)


async def test_the_sdks_still_work(isolated_home: Path) -> None:
    async with (
        FakeAnthropic() as claude,
        FakeOpenAI() as gpt,
        FakeOllama() as llama,
        TapProxy(isolated_home, anthropic=claude.url, openai=gpt.url, ollama=llama.url) as tap,
    ):
        message = await anthropic.AsyncAnthropic(base_url=tap.url, api_key="sk-ant-test").messages.create(
            model="claude-sonnet-4-6", max_tokens=64, messages=[{"role": "user", "content": "I live in Porto."}]
        )
        completion = await openai.AsyncOpenAI(base_url=tap.url + "/v1", api_key="sk-test").chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "I live in Porto."}]
        )
        chat = await ollama.AsyncClient(host=tap.url).chat(
            model="llama3.2", messages=[{"role": "user", "content": "I live in Porto."}], stream=False
        )
        models = await anthropic.AsyncAnthropic(base_url=tap.url, api_key="sk-ant-test").models.list()
        await tap.settle()
    assert message.content and completion.choices and chat.message.content and models.data
    assert len(tap.events) == 3


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
async def test_curl_with_d_and_no_content_type_works(isolated_home: Path) -> None:
    async with FakeOllama() as llama, TapProxy(isolated_home, ollama=llama.url) as tap:
        # Ollama's own docs: curl http://localhost:11434/api/chat -d '{...}' (form content type)
        proc = await asyncio.create_subprocess_exec(
            "curl",
            "-sS",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            tap.url + "/api/chat",
            "-d",
            json.dumps(CHAT),
            stdout=asyncio.subprocess.PIPE,
        )
        out, _ = await proc.communicate()
        await tap.settle()
    assert out == b"200"
    assert llama.requests[0].headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert len(tap.events) == 1


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("127.0.0.1:8787", True),
        ("localhost:8787", True),
        ("LOCALHOST.", True),
        ("app.localhost:8787", True),
        ("[::1]:8787", True),
        ("192.168.1.20:8787", True),
        ("", True),
        ("evil.example:8787", False),
        ("127.0.0.1.evil.example", False),
        ("localhost.evil.example:8787", False),
        ("tap.internal", True),
    ],
)
def test_host_names(host: str, allowed: bool) -> None:
    assert host_allowed(host, {"tap.internal"}) is allowed


def test_same_origin_compares_scheme_host_and_port() -> None:
    assert same_origin("http://127.0.0.1:8787", "127.0.0.1:8787", "http")
    assert same_origin("http://localhost", "localhost:80", "http")
    assert not same_origin("http://127.0.0.1:3000", "127.0.0.1:8787", "http")
    assert not same_origin("https://127.0.0.1:8787", "127.0.0.1:8787", "http")
    assert not same_origin("null", "127.0.0.1:8787", "http")
    assert split_host("[::1]:8787") == ("::1", 8787)
