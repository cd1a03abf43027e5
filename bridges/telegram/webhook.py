"""`POST [telegram] path`: the webhook Telegram calls with each update.

Answers fast and never does model work itself (docs/protocols.md, Telegram Bot API):

    wrong or missing X-Telegram-Bot-Api-Secret-Token  → 401, nothing read or stored
    bridge not connected to the Bot API yet            → 503 (Telegram retries later)
    body not a JSON object with an integer update_id   → 400, logged (without the body)
    an update type tap does not handle (edits, …)      → 200, ignored (not even parsed by PTB)
    update_id seen before (a retried delivery)         → 200, not processed again
    otherwise                                          → 200 after queueing it for PTB

Invariants: the secret is compared in constant time (`hmac.compare_digest`); an update id is
recorded (bridges.telegram.db) only once the update has parsed, right before it is queued,
so each update is processed at most once and a rejected one can be re-sent.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from telegram import Bot, Update

from bridges.telegram.db import TelegramDB
from tap.jsonbody import decode

log = logging.getLogger(__name__)
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
HANDLED_UPDATES = frozenset({"message", "callback_query"})


def parse_update(body: bytes) -> dict[str, Any]:
    """The update as a JSON object; ValueError saying what is wrong."""
    data: Any = decode(body)  # every decoding failure (nesting, bad UTF-8) is a ValueError
    if not isinstance(data, dict):
        raise ValueError("an update must be a JSON object")
    update_id = data.get("update_id")
    if not isinstance(update_id, int) or isinstance(update_id, bool) or not 0 <= update_id < 2**63:
        raise ValueError("update_id must be a non-negative 64-bit integer")
    return data


class Webhook:
    """The aiohttp handler; `accept` hands a parsed update to PTB."""

    def __init__(
        self,
        secret: str,
        *,
        db: Callable[[], TelegramDB | None],
        bot: Callable[[], Bot | None],
        accept: Callable[[Update], Awaitable[None]],
    ) -> None:
        self._secret = secret.encode()
        self._db = db
        self._bot = bot
        self._accept = accept

    def authorised(self, request: web.Request) -> bool:
        """True when the request carries the configured secret."""
        given = request.headers.get(SECRET_HEADER, "").encode()
        return hmac.compare_digest(given, self._secret)

    async def handle(self, request: web.Request) -> web.Response:
        """Check, parse, deduplicate and queue one update (see the module table)."""
        if not self.authorised(request):
            log.warning("telegram: webhook request from %s without the right secret token", request.remote)
            return web.Response(status=401, text="wrong or missing secret token\n")
        db, bot = self._db(), self._bot()
        if db is None or bot is None:
            return web.Response(status=503, text="the Telegram bridge is not connected to the Bot API yet\n")
        try:
            data = parse_update(await request.read())
            if not HANDLED_UPDATES.intersection(data):
                log.debug("telegram: ignoring update %s (%s)", data["update_id"], ", ".join(sorted(data)))
                return web.Response(status=200)
            update = Update.de_json(data, bot)
        except Exception as exc:  # ValueError from parse_update, or PTB rejecting the shape
            log.warning("telegram: rejected a malformed update from %s: %s", request.remote, exc)
            return web.Response(status=400, text=f"malformed update: {exc}\n")
        if not db.first_delivery(update.update_id):
            log.info("telegram: update %d was delivered again; already processed", update.update_id)
            return web.Response(status=200)
        await self._accept(update)
        return web.Response(status=200)
