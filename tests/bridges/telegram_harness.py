"""A real tap app with the Telegram bridge on 127.0.0.1:0, plus real Update JSON builders.

    async with FakeBotAPI() as api, FakeAnthropic(api_key=ANTHROPIC_KEY) as llm, \\
               TapTelegram(home, api.url, anthropic=llm.url) as tap:
        status, _ = await tap.post(text_update("hello"))

`TapTelegram` wires exactly what `tap serve` wires (tap.wiring.server.build_context → proxy.web_app.make_web_app
→ bridges.telegram.add_telegram) around a real runtime (Chroma, ONNX embedder, queue, ledger), and
records every ingestion event on its way into the real ingestor. `set_env` puts the token, the
secret and the Anthropic key in the environment, where tap reads them.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import aiohttp
import pytest
from aiohttp import web

from bridges.telegram import TelegramBridge, TelegramDeps, add_telegram
from proxy.web_app import make_web_app
from store.llm import make_reply_model
from tap.config import LoadedConfig, parse_config
from tap.ingest.capture import Capture, TurnLog
from tap.records import IngestEvent
from tap.runtime.tasks import running_tasks
from tap.wiring.runtime import Runtime, configured_adapters, open_runtime
from tap.wiring.server import build_context
from testkit.fake_telegram import BOT, TOKEN
from testkit.fakes import fake_adapters
from testkit.wire import anthropic_message

SECRET = "test-webhook-secret_42"
ANTHROPIC_KEY = "sk-ant-telegram-test"
MODEL = "claude-haiku-4-5"
ANN = {"id": 111, "is_bot": False, "first_name": "Ann", "username": "ann"}
BOB = {"id": 222, "is_bot": False, "first_name": "Bob", "username": "bob"}
EVE = {"id": 666, "is_bot": False, "first_name": "Eve", "username": "eve"}
GROUP = {"id": -1001234567890, "type": "supergroup", "title": "Bee keepers"}
_ids = itertools.count(1000)


def set_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The env vars `[telegram]` names by default, set as a user would."""
    monkeypatch.setenv("TAP_TELEGRAM_TOKEN", TOKEN)
    monkeypatch.setenv("TAP_TELEGRAM_SECRET", SECRET)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)


def private_chat(user: dict[str, Any]) -> dict[str, Any]:
    return {"id": user["id"], "type": "private", "first_name": user["first_name"]}


def message(
    text: str, *, user: dict[str, Any] = ANN, chat: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    """A Message object as Telegram sends it (a bot_command entity when text starts with /)."""
    msg: dict[str, Any] = {
        "message_id": next(_ids),
        "date": int(time.time()),
        "from": user,
        "chat": chat or private_chat(user),
        "text": text,
        **extra,
    }
    if text.startswith("/"):
        msg.setdefault("entities", [{"type": "bot_command", "offset": 0, "length": len(text.split()[0])}])
    return msg


def text_update(text: str, **kwargs: Any) -> dict[str, Any]:
    """An Update carrying a new text message."""
    return {"update_id": next(_ids), "message": message(text, **kwargs)}


def mention(text_after: str, *, user: dict[str, Any] = ANN) -> dict[str, Any]:
    """A group update that @-mentions the bot."""
    handle = "@" + BOT["username"]
    msg = message(f"{handle} {text_after}", user=user, chat=GROUP)
    msg["entities"] = [{"type": "mention", "offset": 0, "length": len(handle)}]
    return {"update_id": next(_ids), "message": msg}


def button_update(data: str, *, user: dict[str, Any] = ANN, chat: dict[str, Any] | None = None) -> dict[str, Any]:
    """A callback_query from one of the bot's inline buttons."""
    bot_message = {
        "message_id": next(_ids),
        "date": int(time.time()),
        "from": BOT,
        "chat": chat or private_chat(user),
        "text": "…",
    }
    query = {"id": str(next(_ids)), "from": user, "chat_instance": "ci-1", "message": bot_message, "data": data}
    return {"update_id": next(_ids), "callback_query": query}


class TapTelegram:
    """`tap serve`'s app with the bridge enabled, on a free loopback port."""

    def __init__(
        self,
        home: Path,
        api_url: str,
        *,
        anthropic: str = "http://127.0.0.1:9",
        ollama: str = "http://127.0.0.1:9",
        provider: str = "anthropic",
        allowed: tuple[int, ...] = (111, 222),
        extra: str = "",
        typing_interval_s: float = 4.0,
        real_store: bool = False,
    ) -> None:
        self.adapters = configured_adapters if real_store else fake_adapters  # fakes keep nothing across a restart
        model = MODEL if provider == "anthropic" else "llama3.2"
        self.config = parse_config(
            "\n".join(
                [
                    "[telegram]",
                    "enabled = true",
                    f'api_url = "{api_url}"',
                    f"allowed_users = [{', '.join(map(str, allowed))}]",
                    f'provider = "{provider}"',
                    f'model = "{model}"',
                    f'anthropic_url = "{anthropic}"',
                    f'ollama_url = "{ollama}"',
                    extra,
                ]
            )
        )
        self.home = home
        self.typing_interval_s = typing_interval_s
        self.events: list[IngestEvent] = []
        self.url = ""
        self.rt: Runtime | None = None
        self.bridge: TelegramBridge | None = None
        self._runner: web.AppRunner | None = None
        self._turn_log: TurnLog | None = None

    async def _ingest(self, event: IngestEvent) -> int:
        assert self.rt is not None
        self.events.append(event)
        return await self.rt.ingestor.ingest_async(event)

    async def __aenter__(self) -> Self:
        loaded = LoadedConfig(config=self.config, path=None, data_dir=self.home)
        self.rt = await asyncio.to_thread(open_runtime, loaded, adapters=self.adapters)
        self._turn_log = TurnLog(self.home / "turnlog.db")
        try:
            await self._start(self.rt, self._turn_log)
        except BaseException:
            await self._close_runtime()
            raise
        return self

    async def _start(self, rt: Runtime, turn_log: TurnLog) -> None:
        """What tap.wiring.server.serve_forever does between opening the runtime and serving."""
        ctx = build_context(rt, "admin-token", Capture(turn_log, self._ingest))
        app = make_web_app(ctx)
        deps = TelegramDeps(self.config.telegram, self.home, ctx.interceptor, rt.memories, rt.ledger, make_reply_model)
        self.bridge = add_telegram(app, deps, typing_interval_s=self.typing_interval_s)
        self._runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=2.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        pending = running_tasks()
        if pending:
            await asyncio.wait(pending, timeout=5.0)
        await self._close_runtime()

    async def _close_runtime(self) -> None:
        if self._turn_log is not None:
            self._turn_log.close()
        if self.rt is not None:
            self.rt.close()

    async def post(
        self, update: dict[str, Any] | None = None, *, raw: bytes | None = None, secret: str | None = SECRET
    ) -> tuple[int, str]:
        """POST one webhook request as Telegram would; (status, body text)."""
        headers = {"Content-Type": "application/json"}
        if secret is not None:
            headers["X-Telegram-Bot-Api-Secret-Token"] = secret
        body = raw if raw is not None else json.dumps(update).encode()
        async with (
            aiohttp.ClientSession() as session,
            session.post(self.url + "/telegram/webhook", data=body, headers=headers) as r,
        ):
            return r.status, await r.text()

    async def settle_ingest(self, within: float = 15.0) -> None:
        """Wait until every accepted update has been fully handled (reply sent, exchange ingested)."""
        assert self.bridge is not None and self.bridge.application is not None
        await asyncio.wait_for(self.bridge.application.update_queue.join(), within)

    @property
    def ingested_turns(self) -> int:
        """Turns the real ingestor queued for extraction."""
        assert self.rt is not None
        return self.rt.ingestor.turns_ingested

    def remember(self, text: str, scope: str) -> str:
        """Store a memory directly; returns its id."""
        assert self.rt is not None
        return self.rt.memories.add(scope=scope, content=text, importance=4).id

    def scopes_of(self, *, source: str = "telegram") -> list[str]:
        return [event.scope for event in self.events if event.source == source]


def last_user_text(request_body: dict[str, Any]) -> str:
    """Every text of the last user message of an Anthropic request, joined."""
    content = request_body["messages"][-1]["content"]
    return content if isinstance(content, str) else "\n".join(block["text"] for block in content)


def anthropic_text(text: str) -> dict[str, Any]:
    """A non-streamed Messages API answer with one text block."""
    content = [{"type": "text", "text": text}]
    usage = {"input_tokens": 120, "output_tokens": 30}
    return anthropic_message(content, usage=usage, stop_reason="end_turn", model=MODEL, message_id="msg_tg01")


PRIVATE_ANN = "telegram:private:111"
PRIVATE_BOB = "telegram:private:222"
GROUP_SCOPE = f"telegram:group:{GROUP['id']}"
