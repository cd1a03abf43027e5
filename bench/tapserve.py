"""A real `tap serve` subprocess for the benchmarks, and a small JSON client of its admin API.

`Server` starts ``python -m tap --config FILE serve`` on a free loopback port with its own
``TAP_HOME`` (the machine's ``TAP_CONFIG`` and ``TAP_ADMIN_TOKEN`` are not passed on, so the admin
token is the one the server writes to its data dir) and sends its output to a log file there,
never to a pipe nobody reads. It runs from the benchmark's own tree (``code``), so the server and
the benchmark use the same `tap` even when another copy is installed. `Api` makes JSON calls over
one keep-alive connection per calling thread and raises on any status other than the expected one.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any

__all__ = ["Api", "Server"]


class Server:
    """`python -m tap serve` on a free loopback port with its own TAP_HOME; output to a log file."""

    def __init__(self, home: Path, config_text: str, *, code: Path) -> None:
        self.code = code  # the tree whose `tap` runs: the server starts there, so `-m tap` imports it
        self.home = home
        self.config = home / "bench-config.toml"
        self.config.write_text(config_text)
        self.log = home / "serve.log"
        self.url = ""
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 180.0) -> Server:
        env = {k: v for k, v in os.environ.items() if k not in ("TAP_CONFIG", "TAP_ADMIN_TOKEN")}
        env["TAP_HOME"] = str(self.home)
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tap", "--config", str(self.config), "serve", "--host=127.0.0.1", "--port=0"],
                env=env,
                cwd=self.code,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        info = self.home / "server.json"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"tap serve exited early:\n{self.log.read_text(errors='replace')}")
            if info.exists():
                try:
                    started = json.loads(info.read_text())
                    # a server.json left by a server that was killed names another process
                    self.url = started["url"] if started.get("pid") == self.proc.pid else ""
                except (ValueError, KeyError, AttributeError):
                    self.url = ""
                if self.url:
                    return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"tap serve did not start in {timeout:.0f} s:\n{self.log.read_text(errors='replace')}")

    @property
    def token(self) -> str:
        return (self.home / "admin-token").read_text().strip()

    @property
    def pid(self) -> int:
        return self.proc.pid if self.proc else 0

    def stop(self, timeout: float = 60.0) -> str:
        """Stop the server (SIGTERM, then SIGKILL); returns the tail of its log."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
        return self.log.read_text(errors="replace")[-4000:] if self.log.exists() else ""


class Api:
    """JSON calls to tap's admin API: one keep-alive connection per calling thread."""

    def __init__(self, url: str, token: str) -> None:
        parts = urllib.parse.urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        self._local = threading.local()
        self.status_ms: list[float] = []  # wall time of every status poll (its cost to the server)

    def _connection(self) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = http.client.HTTPConnection(self.host, self.port, timeout=600)
        return conn

    def call(self, method: str, path: str, body: Any = None, expect: int = 200) -> tuple[Any, float]:
        """(decoded JSON answer, wall milliseconds); raises RuntimeError on another status."""
        payload = None if body is None else json.dumps(body).encode()
        for attempt in (0, 1):
            conn = self._connection()
            started = time.perf_counter()
            try:
                conn.request(method, path, body=payload, headers=self.headers)
                response = conn.getresponse()
                data = response.read()
            except (http.client.HTTPException, ConnectionError):
                conn.close()
                self._local.conn = None
                if attempt:
                    raise
                continue
            wall = (time.perf_counter() - started) * 1000
            if response.status != expect:
                raise RuntimeError(f"{method} {path}: HTTP {response.status}: {data[:500]!r}")
            return json.loads(data), wall
        raise AssertionError("unreachable")

    def get(self, path: str, **query: Any) -> Any:
        return self.call("GET", f"{path}?{urllib.parse.urlencode(query)}" if query else path)[0]

    def queue(self) -> dict[str, int]:
        """The extraction queue of `GET /tap/status`: queued, running, done, dead, turns_waiting."""
        status, wall = self.call("GET", "/tap/status")
        self.status_ms.append(wall)
        try:
            return dict(status["extraction"]["queue"])
        except (KeyError, TypeError) as exc:
            raise RuntimeError(f"/tap/status has no extraction.queue section: {status}") from exc
