"""Start a real `tap serve` process on a free port and wait until it answers /tap/health.

Its output (one log line per request, and more) is read as it comes, on a thread: left in the pipe,
64 KB of it (~300 requests) filled the pipe and the server stopped in its next log call, with every
request waiting behind it (`./dev bench proxy` hung after its 300 pairs)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from testkit.waits import wait_until


class ServeProcess:
    """`python -m tap serve --port 0` with its own TAP_HOME; `url` once it is up.

    `command` runs another `tap` (an installed one: tests/test_quickstart.py). `user_env` is a whole
    environment to run in instead of this process's plus TAP_HOME: a new user's, where the server
    finds its data dir itself (`home` must then be that dir).
    """

    def __init__(
        self,
        home: Path,
        *,
        config: Path | None = None,
        env: dict[str, str] | None = None,
        prefix: list[str] | None = None,
        command: Sequence[str] = (sys.executable, "-m", "tap"),
        cwd: Path | None = None,
        user_env: dict[str, str] | None = None,
    ) -> None:
        self.home = home
        self.config = config
        self.prefix = prefix or []  # a command the server runs under (testkit.small_disk: its own mount)
        self.env = dict(user_env) if user_env is not None else {**os.environ, "TAP_HOME": str(home), **(env or {})}
        self.command = list(command)
        self.cwd = cwd
        self.url = ""
        self.proc: subprocess.Popen[str] | None = None
        self._output: list[str] = []
        self._reader: threading.Thread | None = None

    def start(self, timeout: float = 60.0) -> ServeProcess:
        (self.home / "server.json").unlink(missing_ok=True)
        args = [*self.prefix, *self.command]
        if self.config:
            args += ["--config", str(self.config)]
        self.proc = subprocess.Popen(
            [*args, "serve", "--port", "0"],
            env=self.env,
            cwd=self.cwd,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        self._output = []
        self._reader = threading.Thread(target=self._read_output, args=(self.proc,), daemon=True)
        self._reader.start()
        try:
            wait_until(self._answers, within=timeout, poll=0.1, what="tap serve to answer /tap/health")
        except AssertionError:
            self.stop()
            raise
        return self

    def _read_output(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self._output.append(line)

    def _printed(self) -> str:
        """Everything the process printed, once it has exited."""
        if self._reader is not None:
            self._reader.join(timeout=10)
        return "".join(self._output)

    def _answers(self) -> bool:
        """Up: it wrote server.json and answers /tap/health (RuntimeError when it exited)."""
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise RuntimeError(f"tap serve exited early:\n{self._printed()}")
        info = self.state / "server.json"
        if not info.exists():
            return False
        self.url = json.loads(info.read_text())["url"]
        with urllib.request.urlopen(self.url + "/tap/health", timeout=5):
            return True

    @property
    def state(self) -> Path:
        """The data dir as this process sees it (the server's own view when it runs under a prefix
        that mounts something there)."""
        if self.prefix and self.proc is not None:
            return Path(f"/proc/{self.proc.pid}/root") / self.home.relative_to("/")
        return self.home

    @property
    def token(self) -> str:
        return (self.state / "admin-token").read_text().strip()

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> str:
        """Stop the process and return everything it printed."""
        if self.proc is None:
            return ""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        out = self._printed()
        self.proc = None
        return out


def configured(home: Path, folder: Path, toml: str, **options: Any) -> ServeProcess:
    """A ServeProcess (not started) whose config file, written in `folder`, holds `toml`."""
    config = folder / "tap.toml"
    config.write_text(toml)
    return ServeProcess(home, config=config, **options)


def admin(server: ServeProcess, method: str, path: str, body: Any = None) -> Any:
    """One admin API call to the server (its bearer token, JSON both ways)."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(server.url + path, data=data, method=method)
    req.add_header("Authorization", f"Bearer {server.token}")
    req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())
