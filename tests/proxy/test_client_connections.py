"""Clients that leave, dawdle or pile up, against a real `tap serve` (proxy.connections, handler
cancellation in tap.wiring.server): a client that leaves cancels its upstream request; slow
headers, stalled bodies and connections over the per-address cap are closed; normal requests go on."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp
import pytest

from testkit.serve_process import admin, configured
from testkit.upstreams import FakeAnthropic
from testkit.waits import until

pytestmark = pytest.mark.slow

H = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
ASK = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}


class SilentUpstream:
    """Reads each request and never answers; notes when tap closes the connection."""

    def __init__(self) -> None:
        self.received = 0
        self.closed = 0
        self.url = ""
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> SilentUpstream:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        self.received += 1
        while await reader.read(65536):  # the body, then nothing until tap hangs up
            pass
        self.closed += 1
        writer.close()


async def test_a_client_that_leaves_cancels_its_upstream_request(isolated_home: Path, tmp_path: Path) -> None:
    async with SilentUpstream() as up:
        server = configured(isolated_home, tmp_path, f'[upstream]\nanthropic = "{up.url}"\n')
        await asyncio.to_thread(server.start)
        try:

            async def give_up() -> None:
                timeout = aiohttp.ClientTimeout(total=1.0)
                async with aiohttp.ClientSession(timeout=timeout) as session:
                    with pytest.raises(TimeoutError):
                        await session.post(server.url + "/v1/messages", json=ASK, headers=H)

            await asyncio.gather(*(give_up() for _ in range(5)))
            # the read timeout is 600 s: before, not one was closed in the 20 s
            await until(lambda: up.closed == 5, within=20, what="the upstream requests cancelled")
            assert up.received == 5
        finally:
            await asyncio.to_thread(server.stop)


async def _closed_within(reader: asyncio.StreamReader, seconds: float) -> bool:
    """Whether the server closed the connection within `seconds` (EOF or a reset)."""
    try:
        return await asyncio.wait_for(reader.read(65536), seconds) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


async def test_slow_headers_stalled_bodies_and_too_many_connections_are_closed(
    isolated_home: Path, tmp_path: Path
) -> None:
    async with FakeAnthropic() as up:
        server = configured(
            isolated_home,
            tmp_path,
            f'[upstream]\nanthropic = "{up.url}"\n'
            "[server]\nheader_timeout_s = 1.0\nidle_timeout_s = 2.0\nmax_connections_per_client = 20\n",
        )
        await asyncio.to_thread(server.start)
        port = int(server.url.rsplit(":", 1)[1])
        try:
            slow = [await asyncio.open_connection("127.0.0.1", port) for _ in range(30)]
            for _, writer in slow:
                writer.write(b"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and never the rest
            closed = await asyncio.gather(*(_closed_within(reader, 15) for reader, _ in slow))
            assert all(closed), f"{closed.count(False)} slow connections still open"
            stalled_reader, stalled = await asyncio.open_connection("127.0.0.1", port)
            stalled.write(
                b"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b'Content-Length: 1000\r\n\r\n{"model": '
            )
            assert await _closed_within(stalled_reader, 15), "a stalled body kept its connection"
            idle_reader, _ = await asyncio.open_connection("127.0.0.1", port)
            assert await _closed_within(idle_reader, 15), "an idle connection was kept"
            async with aiohttp.ClientSession() as session:  # and a normal client is served
                async with session.post(server.url + "/v1/messages", json=ASK, headers=H) as response:
                    assert response.status == 200
            seen = admin(server, "GET", "/tap/status")["connections"]
            assert seen["refused_over_cap"] >= 10 and seen["closed_slow_headers"] >= 1, json.dumps(seen)
            assert seen["closed_stalled_bodies"] == 1, json.dumps(seen)
        finally:
            await asyncio.to_thread(server.stop)
