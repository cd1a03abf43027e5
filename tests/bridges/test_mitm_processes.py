"""The mitm way in as real processes: inside `tap serve` ([mitm] enabled), and `tap mitm` on its own —
next to a running server (recall and ingestion through it) and without one (its own store)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import httpx
import pytest

from tap.ingest.capture import TurnLog
from testkit.serve_process import ServeProcess
from testkit.upstreams import FakeAnthropic
from testkit.waits import wait_until

pytestmark = pytest.mark.slow  # starts other processes (see pyproject.toml: markers)

ASK = {"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": "Which instrument do I play? cello?"}]}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def admin(url: str, token: str, path: str, payload: Any = None) -> Any:
    data = None if payload is None else json.dumps(payload).encode()
    req = urllib.request.Request(url + path, data=data, method="POST" if data else "GET")
    req.add_header("Authorization", f"Bearer {token}")
    req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def listening(port: int, proc: subprocess.Popen[str] | None = None) -> bool:
    """Something accepts connections on the port (RuntimeError when `proc` exited meanwhile)."""
    if proc is not None and proc.poll() is not None:
        raise RuntimeError(f"exited early:\n{proc.stdout.read() if proc.stdout else ''}")
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def wait_for_port(port: int, proc: subprocess.Popen[str] | None = None) -> None:
    wait_until(lambda: listening(port, proc), what=f"something listening on port {port}")


class MitmProcess:
    """`python -m tap mitm ARGS` with its own TAP_HOME."""

    def __init__(self, home: Path, *args: str) -> None:
        env = {**os.environ, "TAP_HOME": str(home)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tap", "mitm", *args],
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        out, _ = self.proc.communicate(timeout=60)
        return out or ""


# a busy test host must not shed the recall these tests check (the default deadline is 150 ms)
GENEROUS_DEADLINE = "[recall]\ndeadline_ms = 3000\n"


def config(tmp: Path, text: str) -> Path:
    path = tmp / "config.toml"
    path.write_text(text)
    return path


async def test_tap_serve_runs_mitm_when_enabled(isolated_home: Path, tmp_path: Path) -> None:
    port = free_port()
    async with FakeAnthropic() as up:
        toml = f'[mitm]\nenabled = true\nregular = false\nreverse = ["{up.url}@{port}"]\n' + GENEROUS_DEADLINE
        server = ServeProcess(isolated_home, config=config(tmp_path, toml))
        await asyncio.to_thread(server.start)
        try:
            await asyncio.to_thread(
                admin,
                server.url,
                server.token,
                "/tap/memories",
                {"scope": "default", "content": "The user plays the cello"},
            )
            async with httpx.AsyncClient() as http:
                r = await http.post(f"http://127.0.0.1:{port}/v1/messages", json=ASK)
            status = await asyncio.to_thread(admin, server.url, server.token, "/tap/status")
        finally:
            out = await asyncio.to_thread(server.stop)
    assert r.status_code == 200 and r.headers["x-tap-recalled"] == "1"
    assert "plays the cello" in up.requests[0].json()["messages"][0]["content"][1]["text"]
    assert status["mitm"]["flows"] == 1 and status["mitm"]["listening"] == {
        f"reverse:{up.url}@{port}": f"http://127.0.0.1:{port}"
    }
    assert f"mitm:     http://127.0.0.1:{port} (reverse)" in out and "Traceback" not in out


async def test_standalone_mitm_goes_through_a_running_server(isolated_home: Path, tmp_path: Path) -> None:
    port = free_port()
    async with FakeAnthropic() as up:
        server = await asyncio.to_thread(ServeProcess(isolated_home, config=config(tmp_path, GENEROUS_DEADLINE)).start)
        mitm: MitmProcess | None = None
        try:
            await asyncio.to_thread(
                admin,
                server.url,
                server.token,
                "/tap/memories",
                {"scope": "default", "content": "The user plays the cello"},
            )
            mitm = MitmProcess(isolated_home, "--no-regular", "--reverse", f"{up.url}@{port}")
            await asyncio.to_thread(wait_for_port, port, mitm.proc)
            async with httpx.AsyncClient() as http:
                r = await http.post(f"http://127.0.0.1:{port}/v1/messages", json=ASK)

            def queued() -> bool:  # the capture goes to the server in the background
                return sum(admin(server.url, server.token, "/tap/status")["extraction"]["queue"].values()) >= 1

            await asyncio.to_thread(wait_until, queued, what="the exchange's turns in the server's queue")
            out = await asyncio.to_thread(mitm.stop)
            ingested = await asyncio.to_thread(admin, server.url, server.token, "/tap/status")
        finally:
            if mitm is not None and mitm.proc.poll() is None:
                mitm.stop()
            await asyncio.to_thread(server.stop)
    assert r.status_code == 200 and r.headers["x-tap-recalled"] == "1"
    assert "plays the cello" in up.requests[0].json()["messages"][0]["content"][1]["text"]
    assert f"through tap serve at {server.url}" in out and "Traceback" not in out
    assert sum(ingested["extraction"]["queue"].values()) >= 1, "the server's queue has the exchange's turns"
    log = TurnLog(isolated_home / "turnlog.db")
    try:
        (exchange,) = log.recent()
    finally:
        log.close()
    assert exchange.source == "mitm" and exchange.user_text == ASK["messages"][0]["content"] and exchange.complete


async def test_standalone_mitm_opens_the_store_when_no_server_runs(isolated_home: Path) -> None:
    port = free_port()
    env = {**os.environ, "TAP_HOME": str(isolated_home)}
    added = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "tap", "memories", "add", "The user plays the cello"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert added.returncode == 0, added.stderr
    async with FakeAnthropic() as up:
        mitm = MitmProcess(isolated_home, "--no-regular", "--reverse", f"{up.url}@{port}")
        try:
            await asyncio.to_thread(wait_for_port, port, mitm.proc)
            async with httpx.AsyncClient() as http:
                r = await http.post(f"http://127.0.0.1:{port}/v1/messages", json=ASK)
        finally:
            out = await asyncio.to_thread(mitm.stop)
    assert r.status_code == 200 and r.headers["x-tap-recalled"] == "1", out
    assert "no tap serve running" in out and "tap mitm: stopped" in out
    log = TurnLog(isolated_home / "turnlog.db")
    try:
        (exchange,) = log.recent()
    finally:
        log.close()
    assert exchange.source == "mitm" and exchange.complete


def seen_turns(home: Path) -> int:
    """Turns the data dir's queue has taken (0 before queue.db exists)."""
    import sqlite3

    try:
        with sqlite3.connect(home / "queue.db") as db:
            return int(db.execute("SELECT count(*) FROM seen").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


async def test_exchanges_wait_in_a_spool_while_the_server_is_away(isolated_home: Path, tmp_path: Path) -> None:
    """A standalone `tap mitm` next to a `tap serve` that stops: each exchange still reaches its
    upstream, waits on disk, and reaches the server when it is back (on another port), or, when the
    mitm stopped first, when a server starts; one line per outage, no traceback."""
    port = free_port()

    async def ask(http: httpx.AsyncClient, text: str) -> httpx.Response:
        body = {**ASK, "messages": [{"role": "user", "content": text}]}
        return await http.post(f"http://127.0.0.1:{port}/v1/messages", json=body)

    async with FakeAnthropic() as up, httpx.AsyncClient() as http:
        server = ServeProcess(isolated_home, config=config(tmp_path, GENEROUS_DEADLINE))
        await asyncio.to_thread(server.start)
        mitm = MitmProcess(isolated_home, "--no-regular", "--reverse", f"{up.url}@{port}")
        try:
            await asyncio.to_thread(wait_for_port, port, mitm.proc)
            await asyncio.to_thread(server.stop)
            away = await ask(http, "I keep my sailing boat in Lagos.")  # the server is gone
            await asyncio.to_thread(server.start)  # back, on another port
            back = await ask(http, "My boat is called Andorinha.")
            await asyncio.to_thread(wait_until, lambda: seen_turns(isolated_home) == 4, what="both exchanges queued")
            await asyncio.to_thread(server.stop)
            later = await ask(http, "I sail on Sundays.")
            await asyncio.to_thread(wait_until, lambda: (isolated_home / "mitm-spool.db").exists(), what="the spool")
        finally:
            out = await asyncio.to_thread(mitm.stop)
        assert seen_turns(isolated_home) == 4  # the third waits in the spool
        await asyncio.to_thread(server.start)  # takes what the stopped mitm left
        try:
            await asyncio.to_thread(
                wait_until, lambda: seen_turns(isolated_home) == 6, what="the third exchange queued"
            )
        finally:
            await asyncio.to_thread(server.stop)
    assert away.status_code == back.status_code == later.status_code == 200 and len(up.requests) == 3
    assert "Traceback" not in out
    assert out.count("captured exchanges wait in") == 2, out  # one line per outage
    assert "tap serve answers again: " in out and " sent from the spool" in out
