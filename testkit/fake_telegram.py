"""A fake Telegram Bot API on 127.0.0.1:0 for python-telegram-bot (`base_url` pointed at it).

    async with FakeBotAPI() as api:                       # api.url → [telegram] api_url
        ...
        (call,) = await api.wait_for("sendMessage")        # what PTB sent, in order
        call.text, call.params["chat_id"], call.json("reply_markup")
        api.fail_next("sendMessage", 429, "Too Many Requests: retry after 1", retry_after=1)

It speaks the real wire format: `POST /bot<token>/<method>` with form-encoded parameters (PTB
JSON-encodes every non-string value), answers `{"ok": true, "result": …}` or
`{"ok": false, "error_code": …, "description": …, "parameters": {"retry_after": …}}` with the
same HTTP status. A wrong token gets 401 Unauthorized (as Telegram answers). Every call is
recorded *before* it is answered, scripted failures included.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

from aiohttp import web

TOKEN = "123456789:AAE-test_token-that-must-never-leak-0x42"
BOT = {"id": 999001, "is_bot": True, "first_name": "Tap", "username": "tap_test_bot"}


@dataclass(frozen=True)
class BotCall:
    """One Bot API call as the fake received it."""

    method: str
    params: dict[str, str]
    at: float

    @property
    def text(self) -> str:
        return self.params.get("text", "")

    def json(self, name: str) -> Any:
        """A JSON-encoded parameter, decoded."""
        return json.loads(self.params[name])


@dataclass
class Failure:
    """A scripted error answer."""

    method: str
    status: int
    description: str
    retry_after: int | None = None
    when: Callable[[dict[str, str]], bool] = field(default=lambda params: True)


class FakeBotAPI:
    """The Bot API methods tap uses, with a call log and scripted failures."""

    def __init__(self, token: str = TOKEN, *, port: int = 0) -> None:
        self.token = token
        self.port = port
        self.calls: list[BotCall] = []
        self.url = ""
        self.webhook: dict[str, Any] = {"url": "", "has_custom_certificate": False, "pending_update_count": 0}
        self._failures: list[Failure] = []
        self._message_ids = iter(range(5000, 10**6))
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_route("*", "/bot{token}/{method}", self._handle)
        self._runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=0.5)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    # --- scripting and inspection ----------------------------------------------------------------

    def fail_next(
        self,
        method: str,
        status: int,
        description: str,
        *,
        retry_after: int | None = None,
        when: Callable[[dict[str, str]], bool] | None = None,
    ) -> None:
        """Answer the next matching call of `method` with an error."""
        self._failures.append(Failure(method, status, description, retry_after, when or (lambda params: True)))

    def sent(self, method: str) -> list[BotCall]:
        """Every call of `method` so far."""
        return [call for call in self.calls if call.method == method]

    async def wait_for(self, method: str, count: int = 1, within: float = 15.0) -> list[BotCall]:
        """Wait until `method` was called at least `count` times; returns those calls."""
        async with asyncio.timeout(within), self._changed:
            await self._changed.wait_for(lambda: len(self.sent(method)) >= count)
        return self.sent(method)

    # --- serving ---------------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params = {k: str(v) for k, v in (await request.post()).items()}
        async with self._changed:
            self.calls.append(BotCall(method, params, time.monotonic()))
            self._changed.notify_all()
        if request.match_info["token"] != self.token:
            return self._error(401, "Unauthorized")
        failure = next((f for f in self._failures if f.method == method and f.when(params)), None)
        if failure is not None:
            self._failures.remove(failure)
            return self._error(failure.status, failure.description, failure.retry_after)
        return web.json_response({"ok": True, "result": self._result(method, params)})

    def _error(self, status: int, description: str, retry_after: int | None = None) -> web.Response:
        body: dict[str, Any] = {"ok": False, "error_code": status, "description": description}
        if retry_after is not None:
            body["parameters"] = {"retry_after": retry_after}
        return web.json_response(body, status=status)

    def _result(self, method: str, params: dict[str, str]) -> Any:
        if method == "getMe":
            return {
                **BOT,
                "can_join_groups": True,
                "can_read_all_group_messages": False,
                "supports_inline_queries": False,
            }
        if method in ("sendMessage", "editMessageText"):
            return self._message(params)
        if method == "setWebhook":
            allowed = json.loads(params.get("allowed_updates", "[]"))
            self.webhook = {**self.webhook, "url": params["url"], "allowed_updates": allowed, "max_connections": 40}
            return True
        if method == "deleteWebhook":
            self.webhook = {"url": "", "has_custom_certificate": False, "pending_update_count": 0}
            return True
        if method == "getWebhookInfo":
            return self.webhook
        return True  # sendChatAction, answerCallbackQuery, setMyCommands

    def _message(self, params: dict[str, str]) -> dict[str, Any]:
        chat_id = int(params["chat_id"])
        chat = {"id": chat_id, "type": "private" if chat_id > 0 else "supergroup", "title": "A group"}
        message_id = int(params.get("message_id") or next(self._message_ids))
        return {"message_id": message_id, "date": int(time.time()), "chat": chat, "from": BOT, "text": params["text"]}
