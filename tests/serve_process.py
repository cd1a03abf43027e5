"""Start a real `tap serve` process on a free port and wait until it answers /tap/health."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path


class ServeProcess:
    """`python -m tap serve --port 0` with its own TAP_HOME; `url` once it is up."""

    def __init__(self, home: Path, *, config: Path | None = None, env: dict[str, str] | None = None) -> None:
        self.home = home
        self.config = config
        self.env = {**os.environ, "TAP_HOME": str(home), **(env or {})}
        self.url = ""
        self.proc: subprocess.Popen[str] | None = None

    def start(self, timeout: float = 60.0) -> ServeProcess:
        (self.home / "server.json").unlink(missing_ok=True)
        args = [sys.executable, "-m", "tap"]
        if self.config:
            args += ["--config", str(self.config)]
        self.proc = subprocess.Popen(
            [*args, "serve", "--port", "0"],
            env=self.env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        info = self.home / "server.json"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"tap serve exited early:\n{self.proc.stdout.read() if self.proc.stdout else ''}")
            if info.exists():
                self.url = json.loads(info.read_text())["url"]
                with urllib.request.urlopen(self.url + "/tap/health", timeout=5):
                    return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError("tap serve did not start in time")

    @property
    def token(self) -> str:
        return (self.home / "admin-token").read_text().strip()

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> str:
        """Stop the process and return everything it printed."""
        if self.proc is None:
            return ""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            out, _ = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, _ = self.proc.communicate()
        self.proc = None
        return out or ""
