"""Smaller faults of the data dir under a real `tap serve`: `tap ingest` writes its progress file
private, and a store whose database file is deleted while tap runs is said to be down (and recalls
nothing: the lexical index would have gone on injecting memories the store no longer keeps)."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from testkit.serve_process import ServeProcess, admin, configured
from testkit.upstreams import FakeAnthropic
from testkit.waits import until

pytestmark = pytest.mark.slow


def test_tap_ingest_writes_its_progress_file_private(isolated_home: Path, tmp_path: Path) -> None:
    server = ServeProcess(isolated_home).start()
    try:
        log = tmp_path / "chat.txt"
        log.write_text("User: I moved to Lisbon in May.\nAssistant: Noted.\n")
        env = {**os.environ, "TAP_HOME": str(isolated_home)}
        done = subprocess.run(
            [sys.executable, "-m", "tap", "ingest", str(log), "--format", "text"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            preexec_fn=lambda: os.umask(0o022),  # a user's usual umask
        )
        assert done.returncode == 0, done.stderr
    finally:
        server.stop()
    for name in ("logtail.db", "logtail.db-wal"):
        path = isolated_home / name
        if path.exists():
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, name


def _health(url: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(url + "/tap/health", timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


async def test_a_deleted_store_file_is_down_and_recalls_nothing(isolated_home: Path, tmp_path: Path) -> None:
    async with FakeAnthropic() as up:
        server = configured(isolated_home, tmp_path, f'[upstream]\nanthropic = "{up.url}"\n')
        await asyncio.to_thread(server.start)
        try:
            admin(server, "POST", "/tap/memories", {"scope": "ann", "content": "Ann keeps bees in Sintra"})
            payload = {
                "model": "m",
                "max_tokens": 5,
                "messages": [{"role": "user", "content": "Where are Ann's bees?"}],
            }
            headers = {"x-api-key": "k", "anthropic-version": "2023-06-01", "x-tap-scope": "ann"}

            async def recalled(question: str) -> str:
                payload["messages"] = [{"role": "user", "content": question}]  # a new turn: recalled afresh
                async with aiohttp.ClientSession() as session:
                    async with session.post(server.url + "/v1/messages", json=payload, headers=headers) as response:
                        assert response.status == 200  # the chat goes on either way
                        await response.read()
                        return response.headers.get("x-tap-recalled", "0")

            assert await recalled("Where are Ann's bees?") == "1"
            (isolated_home / "chroma" / "chroma.sqlite3").unlink()
            status, doc = await until(
                lambda: (
                    (found := _health(server.url))[1]["status"] == "down"
                    and "was deleted" in found[1]["reason"]
                    and found
                ),
                what="health down, saying why",
            )
            assert status == 503 and "chroma.sqlite3 was deleted or replaced" in doc["reason"], doc
            assert str(isolated_home) not in json.dumps(doc)
            assert await recalled("Where does Ann keep her bees?") == "0"
        finally:
            await asyncio.to_thread(server.stop)
