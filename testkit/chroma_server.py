"""A real Chroma server (`chroma run`) on a free loopback port, for store tests."""

from __future__ import annotations

import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

from testkit.waits import wait_until


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ChromaServer:
    """Starts `chroma run --path DIR --port N` and stops it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> None:
        chroma = Path(sys.executable).with_name("chroma")
        self._proc = subprocess.Popen(
            [str(chroma), "run", "--path", str(self.path), "--host", "127.0.0.1", "--port", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_until(self._answers, within=timeout, poll=0.2, what="chroma run to answer its heartbeat")
        except AssertionError:
            self.stop()
            raise

    def _answers(self) -> bool:
        """Up: it answers the heartbeat (RuntimeError when it exited)."""
        assert self._proc is not None
        if self._proc.poll() is not None:
            raise RuntimeError(f"chroma run exited with {self._proc.returncode}")
        try:
            with urllib.request.urlopen(f"{self.url}/api/v2/heartbeat", timeout=1):
                return True
        except OSError:
            return False

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
            self._proc = None
