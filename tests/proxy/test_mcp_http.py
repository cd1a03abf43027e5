"""`/mcp` on tap's port, driven by the MCP SDK's own streamable HTTP client.

The tools against the app's store: what `remember` writes is in the next proxied request's block
and a `forget` takes it out of the next one; the scope is the request's `x-tap-scope`; the admin
token and the guard's Host/Origin rules hold as on every other path; bad input is an error
result, and the endpoint keeps serving.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent

from testkit.upstreams import FakeAnthropic
from tests.proxy.harness import TapProxy

TOKEN = "test-token"
HEADERS = {"x-api-key": "sk-ant-test-123", "anthropic-version": "2023-06-01", "content-type": "application/json"}


class Mcp:
    """One MCP client session on `/mcp` (the SDK's client), in one scope."""

    def __init__(self, url: str, scope: str | None = None, token: str = TOKEN) -> None:
        headers = {"Authorization": f"Bearer {token}"}
        if scope is not None:
            headers["x-tap-scope"] = quote(scope, safe="")
        self.http = httpx2.AsyncClient(headers=headers, trust_env=False, timeout=30)
        self.client = Client(streamable_http_client(url + "/mcp", http_client=self.http), cache=None)

    async def __aenter__(self) -> Mcp:
        await self.http.__aenter__()
        await self.client.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.client.__aexit__(*exc)
        await self.http.__aexit__(*exc)

    async def call(self, tool: str, **arguments: Any) -> CallToolResult:
        return await self.client.call_tool(tool, arguments)

    async def text(self, tool: str, **arguments: Any) -> str:
        result = await self.call(tool, **arguments)
        assert not result.is_error, text_of(result)
        return text_of(result)


def text_of(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


async def ask(tap: TapProxy, up: FakeAnthropic, question: str, scope: str) -> str:
    """Send a chat request through the proxy; the text of what reached the upstream."""
    body = {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": question}]}
    headers = {**HEADERS, "x-tap-scope": scope}
    async with (
        aiohttp.ClientSession() as session,
        session.post(tap.url + "/v1/messages", json=body, headers=headers) as r,
    ):
        assert r.status == 200
        await r.read()
    return json.dumps(up.requests[-1].json())


async def test_every_tool_against_the_store_and_the_proxy_sees_remember_and_forget(isolated_home: Path) -> None:
    async with FakeAnthropic() as up, TapProxy(isolated_home, anthropic=up.url, mcp=True) as tap:
        async with Mcp(tap.url, scope="billing") as mcp:
            listed = await mcp.client.list_tools()
            tools = {tool.name: tool for tool in listed.tools}
            assert set(tools) == {"search_memories", "remember", "forget", "recent_memories", "why"}
            assert all(tool.description and tool.input_schema["type"] == "object" for tool in listed.tools)
            assert tools["search_memories"].input_schema["required"] == ["query"]
            assert tools["forget"].annotations is not None and tools["forget"].annotations.destructive_hint

            saved = await mcp.text("remember", text="The billing service deploys with Helm charts", importance=4)
            memory_id = re.search(r"\[(m_[0-9a-f]+)\]", saved)
            assert saved.startswith("Remembered [m_") and memory_id is not None
            assert "Helm charts" in await ask(tap, up, "How does billing deploy?", "billing")

            found = await mcp.text("search_memories", query="how does billing deploy", limit=5)
            assert memory_id[1] in found and "remembered via mcp" in found
            assert memory_id[1] in await mcp.text("recent_memories", limit=3)
            why = await mcp.text("why")
            assert "/v1/messages" in why and f"injected [{memory_id[1]}]" in why

            gone = await mcp.text("forget", id=memory_id[1])
            assert gone.startswith(f"Forgot [{memory_id[1]}]")
            assert "Helm charts" not in await ask(tap, up, "How does billing deploy again?", "billing")
            assert "No memories match" in await mcp.text("search_memories", query="Helm charts")


async def test_scope_comes_from_the_header_and_never_leaks(isolated_home: Path) -> None:
    async with TapProxy(isolated_home, mcp=True) as tap:
        private = tap.remember("The user's bank PIN hint is a cat's name", scope="/home/ana/private notes")
        async with Mcp(tap.url, scope="/home/ana/private notes") as mine, Mcp(tap.url) as other:
            assert private in await mine.text("search_memories", query="bank PIN hint")
            assert "No memories match" in await other.text("search_memories", query="bank PIN hint")
            refused = await other.call("forget", id=private)
            assert refused.is_error and "no memory" in text_of(refused)
            assert tap.rt is not None and tap.rt.memories.get(private) is not None


async def test_forget_by_query_needs_the_token_it_gave(isolated_home: Path) -> None:
    async with TapProxy(isolated_home, mcp=True) as tap:
        kept = tap.remember("The user's dentist is Dr. Rivera", scope="me")
        async with Mcp(tap.url, scope="me") as mcp, Mcp(tap.url, scope="someone-else") as other:
            listed = await mcp.text("forget", query="dentist")
            assert listed.startswith("Nothing is forgotten yet") and kept in listed
            token = re.search(r"confirm='(forget-[\w-]+)'", listed)
            assert token is not None and tap.rt is not None and tap.rt.memories.get(kept) is not None
            stolen = await other.call("forget", confirm=token[1])  # another scope cannot use it
            assert stolen.is_error and "unknown" in text_of(stolen)
            assert (await mcp.text("forget", confirm=token[1])).startswith(f"Forgot [{kept}]")
            assert tap.rt.memories.get(kept) is None
            reused = await mcp.call("forget", confirm=token[1])
            assert reused.is_error and "already used" in text_of(reused)
            both = await mcp.call("forget", id=kept, query="dentist")
            assert both.is_error and "exactly one" in text_of(both)


async def test_bad_input_is_an_error_result_and_the_endpoint_keeps_serving(isolated_home: Path) -> None:
    async with TapProxy(isolated_home, mcp=True) as tap:
        async with Mcp(tap.url, scope="me") as mcp:
            unknown = await mcp.call("drop_database")
            assert unknown.is_error and "Unknown tool" in text_of(unknown)
            wrong = await mcp.call("search_memories", query="x", limit="many")
            assert wrong.is_error and "limit" in text_of(wrong)
            huge = await mcp.call("remember", text="word " * 1000)
            assert huge.is_error and "2000" in text_of(huge)
            assert tap.rt is not None

            def down(*args: Any, **kwargs: Any) -> Any:
                from tap.errors import StoreError

                raise StoreError("the store does not answer (test)")

            tap.rt.memories.search = down  # type: ignore[method-assign]  # the store goes down
            failed = await mcp.call("search_memories", query="anything")
            assert failed.is_error and "store does not answer" in text_of(failed)
            assert "No memories" in await mcp.text("recent_memories")  # still serving


async def test_the_endpoint_needs_the_token_and_refuses_other_sites(isolated_home: Path) -> None:
    async with TapProxy(isolated_home, mcp=True) as tap:
        init = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        accept = {"Accept": "application/json, text/event-stream", "content-type": "application/json"}
        cases = [
            ({}, 401),
            ({"Authorization": "Bearer wrong"}, 401),
            ({"Authorization": f"Bearer {TOKEN}", "Origin": "https://evil.example"}, 403),
            ({"Authorization": f"Bearer {TOKEN}", "Host": "evil.example"}, 403),
            ({"Authorization": f"Bearer {TOKEN}", "x-tap-scope": "a%0Ab"}, 400),
        ]
        async with aiohttp.ClientSession() as session:
            for headers, status in cases:
                async with session.post(tap.url + "/mcp", json=init, headers={**accept, **headers}) as r:
                    assert r.status == status, (headers, await r.text())
