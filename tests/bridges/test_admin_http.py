"""The one HTTP client of tap serve (bridges.admin_http), against real servers on loopback: an
aiohttp app (chunked and Content-Length answers, a query, a bearer token) and a socket that
answers nothing whole. The hook command and the CLI's AdminClient run it against a real tap serve
(tests/bridges/test_hooks_serve.py, tests/tap/cli/test_cli_remote.py)."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from bridges.admin_http import NoAnswer, exchange, parse_response, split_url


def test_urls_and_raw_answers() -> None:
    assert split_url("http://127.0.0.1:8787") == ("127.0.0.1", 8787, "")
    assert split_url("http://[::1]:9000/base/") == ("::1", 9000, "/base")
    assert split_url("http://localhost") == ("localhost", 80, "")
    with pytest.raises(ValueError, match="plain http"):
        split_url("https://127.0.0.1:8787")
    plain = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: application/json\r\n\r\n{}trailing"
    assert parse_response(plain) == (200, b"{}")
    chunked = b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{"a\r\n4\r\n": 1\r\n1\r\n}\r\n0\r\n\r\n'
    assert parse_response(chunked) == (200, b'{"a": 1}')
    assert parse_response(b"HTTP/1.1 401 Unauthorized\r\n\r\nno") == (401, b"no")
    with pytest.raises(NoAnswer, match="incomplete"):
        parse_response(b"HTTP/1.1 200 OK\r\nContent-Le")
    with pytest.raises(NoAnswer, match="chunked"):
        parse_response(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")


@pytest.fixture
async def server() -> AsyncIterator[str]:
    async def echo(request: web.Request) -> web.StreamResponse:
        said = {"auth": request.headers.get("Authorization"), "query": dict(request.query)}
        body = (await request.read()).decode()
        if request.query.get("stream"):
            response = web.StreamResponse()
            response.enable_chunked_encoding()
            await response.prepare(request)
            for part in (body, "|", str(said["query"])):
                await response.write(part.encode())
            await response.write_eof()
            return response
        return web.json_response({**said, "body": body, "method": request.method}, status=201)

    app = web.Application()
    app.router.add_route("*", "/base/tap/echo", echo)
    served = TestServer(app, host="127.0.0.1", port=0)
    await served.start_server()
    yield f"http://127.0.0.1:{served.port}/base"
    await served.close()


async def test_a_request_and_its_answer_through_a_real_server(server: str) -> None:
    status, body = await asyncio.to_thread(
        exchange, server, "PATCH", "/tap/echo", token="t0k", body=b'{"x": 1}', query={"a": "1 2", "b": None}, timeout=10
    )
    assert status == 201
    assert json.loads(body) == {"auth": "Bearer t0k", "query": {"a": "1 2"}, "body": '{"x": 1}', "method": "PATCH"}
    status, body = await asyncio.to_thread(
        exchange, server, "POST", "/tap/echo", token="t", body=b"abc", query={"stream": "1"}, timeout=10
    )
    assert (status, body) == (200, b"abc|{'stream': '1'}")


def test_a_server_that_answers_nothing_whole_is_no_answer() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]

        def hang_up() -> None:
            conn, _ = listener.accept()
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-")
            conn.close()

        threading.Thread(target=hang_up, daemon=True).start()
        with pytest.raises(NoAnswer, match="incomplete"):
            exchange(f"http://127.0.0.1:{port}", "GET", "/tap/status", token="t", timeout=10)
    with pytest.raises(NoAnswer, match="did not answer"):
        exchange(f"http://127.0.0.1:{port}", "GET", "/tap/status", token="t", timeout=10)
