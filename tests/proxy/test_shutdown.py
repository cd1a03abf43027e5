"""SIGTERM during a stream: the in-flight response finishes, then `tap serve` exits cleanly."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import aiohttp
import pytest

from testkit.serve_process import ServeProcess
from testkit.upstreams import FakeAnthropic, load_transcript

pytestmark = pytest.mark.slow  # starts other processes (see pyproject.toml: markers)


async def test_sigterm_lets_the_open_stream_finish(isolated_home: Path, tmp_path: Path) -> None:
    async with FakeAnthropic(chunk_sizes=(64,), delay=0.05) as up:
        config = tmp_path / "tap.toml"
        config.write_text(f'[upstream]\nanthropic = "{up.url}"\n')
        server = await asyncio.to_thread(ServeProcess(isolated_home, config=config).start)
        payload = {"model": "m", "max_tokens": 5, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
        async with (
            aiohttp.ClientSession() as session,
            session.post(
                server.url + "/v1/messages", json=payload, headers={"x-api-key": "k", "anthropic-version": "2023-06-01"}
            ) as response,
        ):
            received = await response.content.read(64)
            assert server.proc is not None
            server.proc.send_signal(signal.SIGTERM)
            received += await response.content.read()
        output = await asyncio.to_thread(server.stop)
    assert received == load_transcript("anthropic_stream.sse")
    assert "stopping" in output and "tap: stopped" in output
