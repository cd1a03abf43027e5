"""Excerpts that carry no fact do not crowd statements out of a block, and a paste is stored once.

A real `tap serve` (embedded Chroma, the ONNX embedder, the offline extractor) behind a fake
Anthropic API: a chat about a dog goes through the proxy, then `tap recall` and `tap memories list
--excerpts` read what was kept.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from click.testing import CliRunner

from tap.cli.main import main
from testkit.serve_process import ServeProcess, admin, configured
from testkit.upstreams import FakeAnthropic
from testkit.waits import until
from testkit.wire import anthropic_message

PARAGRAPH = (
    "The nightly backup copied the photo library to the NAS and checked every file against its hash. "
    "Two files were skipped because they were open in the editor at the time. "
    "The next run starts at two in the morning and takes about forty minutes."
)
PASTE = " ".join([PARAGRAPH] * 300)  # a long paste that repeats itself (tap keeps its first ~2,000 tokens)
CHAT = [
    ("I feed my dog salmon kibble twice a day.", "Noted, I'll keep that in mind."),
    ("What should I feed my dog in the morning?", "Got it. Anything else?"),
    ("what should I feed my dog when he is sick?", "Okay, thanks for letting me know!"),
    ("The vet said Rex should eat lamb and rice when his stomach is upset.", "Noted, Rex eats lamb and rice."),
    ("Is it ok to feed my dog bananas?", "Sure."),
    ("Can I feed my dog rice every day?", "Understood."),
    ("How much should I feed my dog?", "Got it, thanks."),
    ("Here is last night's backup log: " + PASTE, "Thanks, noted."),
    ("Here is last night's backup log: " + PASTE, "Got it."),  # sent again
]


def cli(*args: str) -> Any:
    result = CliRunner().invoke(main, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def extraction_done(server: ServeProcess) -> bool:
    queue = admin(server, "GET", "/tap/status")["extraction"]["queue"]
    return bool(queue["done"]) and not (queue["queued"] or queue["running"] or queue["turns_waiting"])


@pytest.mark.slow
async def test_questions_and_acknowledgements_leave_the_block_to_statements_and_a_paste_is_kept_once(
    isolated_home: Path, tmp_path: Path
) -> None:
    async with FakeAnthropic() as up:
        toml = f'[upstream]\nanthropic = "{up.url}"\n[extract]\nflush_after_s = 0.5\n'
        server = await asyncio.to_thread(configured(isolated_home, tmp_path, toml).start)
        try:
            headers = {"x-api-key": "k", "anthropic-version": "2023-06-01", "x-tap-conversation": "dog"}
            messages: list[dict[str, str]] = []
            async with aiohttp.ClientSession() as session:
                for said, answer in CHAT:
                    messages.append({"role": "user", "content": said})
                    up.reply(body=anthropic_message([{"type": "text", "text": answer}], stop_reason="end_turn"))
                    payload = {"model": "m", "max_tokens": 50, "messages": messages}
                    async with session.post(server.url + "/v1/messages", json=payload, headers=headers) as response:
                        assert response.status == 200, await response.text()
                        await response.read()
                    messages.append({"role": "assistant", "content": answer})
            await until(lambda: extraction_done(server), within=120, what="extraction of the chat")

            found = await asyncio.to_thread(cli, "recall", "what should I feed my dog", "--budget", "120")
            block = [(m["kind"], m["content"]) for m in found["memories"]]
            statements = [content for kind, content in block if kind != "episode"]
            assert any("salmon kibble" in content for content in statements), block
            # the answer only an excerpt holds is still recalled
            assert ("episode", "User: The vet said Rex should eat lamb and rice when his stomach is upset.") in block
            assert not any(content.startswith("Assistant:") for _, content in block), block  # acknowledgements
            asked = [content for _, content in block if content.endswith("?")]
            assert len(asked) <= 1, block  # the user's own questions only fill what room is left

            excerpts = await asyncio.to_thread(cli, "memories", "list", "--excerpts", "--limit", "500")
            pasted = [m for m in excerpts if "nightly backup" in m["content"]]
            assert 1 <= len(pasted) <= 3, [m["content"][:60] for m in pasted]  # not 60 passages of one paragraph
            assert any(len(m["sources"]) == 2 for m in pasted)  # sent twice, stored once, citing both turns
        finally:
            await asyncio.to_thread(server.stop)
