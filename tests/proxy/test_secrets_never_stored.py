"""The secret shapes the scrubber used to miss reach none of tap's files through a real `tap serve`:
not the turn log, the queue, the lexical index or Chroma (tap.secret_shapes)."""

from __future__ import annotations

import asyncio
import urllib.request
from pathlib import Path

import aiohttp
import pytest

from testkit.serve_process import admin, configured
from testkit.upstreams import FakeAnthropic
from testkit.waits import until

pytestmark = pytest.mark.slow

SECRETS = {
    "card spaced": "4111 1111 1111 1111",
    "card dashed": "5555-5555-5555-4444",
    "card plain": "378282246310005",
    "ssn": "123-45-6789",
    "stripe": "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "hex token": "3f9a1c2b4d5e6f708192a3b4c5d6e7f8091a2b3c",
    "aws secret alone": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "password's": "Hunter2Blue",
    "wifi pw": "kettle-Blue-42",
    "German": "Gartenzwerg7",
}
SAID = (
    "I decided to keep my notes here. My card is 4111 1111 1111 1111 and the other one 5555-5555-5555-4444, "
    "the amex 378282246310005. My SSN is 123-45-6789. The stripe key sk_live_4eC39HqLyjWDarjtT1zdp7dc, "
    "token 3f9a1c2b4d5e6f708192a3b4c5d6e7f8091a2b3c, and this: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY. "
    "My password's Hunter2Blue, the wifi pw: kettle-Blue-42, und das Passwort für das WLAN ist Gartenzwerg7."
)


async def test_secret_shapes_reach_no_file(isolated_home: Path, tmp_path: Path) -> None:
    async with FakeAnthropic() as up:
        server = configured(
            isolated_home, tmp_path, f'[upstream]\nanthropic = "{up.url}"\n[extract]\nflush_after_s = 0.5\n'
        )
        await asyncio.to_thread(server.start)
        try:
            payload = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": SAID}]}
            headers = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
            async with aiohttp.ClientSession() as session:
                async with session.post(server.url + "/v1/messages", json=payload, headers=headers) as response:
                    assert response.status == 200
            await until(
                lambda: admin(server, "GET", "/tap/status")["extraction"]["queue"]["done"] >= 1,
                what="the exchange extracted",
            )
            request = urllib.request.Request(
                server.url + "/tap/export", headers={"Authorization": f"Bearer {server.token}"}
            )
            exported = await asyncio.to_thread(lambda: urllib.request.urlopen(request, timeout=30).read().decode())
            assert "[REDACTED]" in exported
        finally:
            await asyncio.to_thread(server.stop)
        stored = await asyncio.to_thread(_every_file, isolated_home)
        for what, secret in SECRETS.items():
            assert secret not in exported, what
            assert secret.encode() not in stored, f"{what} is in a file of the data dir"


def _every_file(home: Path) -> bytes:
    return b"".join(path.read_bytes() for path in home.rglob("*") if path.is_file())
