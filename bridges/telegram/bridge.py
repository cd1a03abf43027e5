"""The Telegram bridge inside `tap serve`: route registration, PTB lifecycle, and its services.

`add_telegram(app, deps)` is the one entry point for the composition root. Called while the
aiohttp app is being built (routes cannot be added once it is frozen), it:
- reads and checks the bot token, the webhook secret and the reply model's key (ConfigError
  naming the env var, before tap binds its port);
- registers `POST [telegram] path` (bridges.telegram.webhook) and the bridge's lifecycle in
  `app.cleanup_ctx`, so the bridge starts with the server and stops before it is torn down.

Lifecycle (docs/protocols.md, Telegram Bot API: PTB embedded in tap's loop, `.updater(None)`, never `run_polling`):
start opens `<data dir>/telegram.db`, builds the PTB `Application` against `[telegram] api_url`,
calls `initialize()` (getMe) and `start()`. A rejected token stops `tap serve` with a ConfigError;
an unreachable Bot API, or one whose answer PTB cannot use (e.g. `{"ok": true}` without
`result`), does not: tap keeps serving, the webhook answers 503 (Telegram retries) and the
bridge reconnects in the background with backoff. Stop lets handlers that are running
finish (PTB's `stop()` waits for them; each is bounded by `reply_timeout_s`), then shuts down.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web
from telegram import Bot, Update
from telegram.error import InvalidToken, TelegramError
from telegram.ext import AIORateLimiter, ApplicationBuilder

from bridges.telegram.commands import Commands
from bridges.telegram.conversation import TYPING_INTERVAL_S, ChatResponder
from bridges.telegram.credentials import Credentials, bot_url, file_url, read_credentials
from bridges.telegram.db import TelegramDB
from bridges.telegram.handlers import BotApplication, Handlers
from bridges.telegram.ordering import ChatOrderedProcessor
from bridges.telegram.redact import redact
from bridges.telegram.send import Sender, use_timedelta_periods
from bridges.telegram.webhook import Webhook
from tap.config import TelegramConfig
from tap.errors import ConfigError
from tap.extract.costs import CostLedger
from tap.intercept.core import Interceptor
from tap.intercept.reply_model import ReplyModel
from tap.memories.service import MemoryService
from tap.runtime.tasks import create_task

log = logging.getLogger(__name__)
CONNECT_TIMEOUT_S = 15.0
FIRST_RETRY_S = 1.0  # the wait before the first retry of an unusable Bot API; doubles up to MAX_BACKOFF_S
MAX_BACKOFF_S = 60.0
CONCURRENT_UPDATES = 64
FLOOD_RETRIES = 3  # a 429 is waited out (as long as Telegram asks) and the call tried again, three times


@dataclass(frozen=True)
class TelegramDeps:
    """What the bridge needs from tap's core, handed in by the composition root: the core services
    and the factory of the chat model (`store.llm.make_reply_model` in `tap serve`), called once
    when the bridge is added."""

    config: TelegramConfig
    data_dir: Path
    intercept: Interceptor
    memories: MemoryService
    ledger: CostLedger
    make_reply_model: Callable[[TelegramConfig], ReplyModel]


def build_application(cfg: TelegramConfig, token: str) -> BotApplication:
    """A PTB Application for `[telegram] api_url` that tap feeds itself (no Updater, no JobQueue)."""
    use_timedelta_periods()
    return (
        ApplicationBuilder()
        .token(token)
        .base_url(bot_url(cfg))
        .base_file_url(file_url(cfg))
        .updater(None)
        .job_queue(None)
        .concurrent_updates(ChatOrderedProcessor(CONCURRENT_UPDATES))
        .rate_limiter(AIORateLimiter(max_retries=FLOOD_RETRIES))
        .build()
    )


class TelegramBridge:
    """Telegram → tap → model; one per `tap serve`."""

    def __init__(
        self, deps: TelegramDeps, creds: Credentials, model: ReplyModel, *, typing_interval_s: float = TYPING_INTERVAL_S
    ) -> None:
        self.deps = deps
        self.cfg = deps.config
        self._creds = creds
        self.model = model
        self.typing_interval_s = typing_interval_s
        self.application: BotApplication | None = None
        self.db: TelegramDB | None = None
        self.handlers: Handlers | None = None
        self.ready = False
        self._connector: asyncio.Task[None] | None = None
        self.webhook = Webhook(creds.secret, db=self._ready_db, bot=self._ready_bot, accept=self._accept)

    def _ready_db(self) -> TelegramDB | None:
        return self.db if self.ready else None

    def _ready_bot(self) -> Bot | None:
        return self.application.bot if self.ready and self.application is not None else None

    async def _accept(self, update: Update) -> None:
        assert self.application is not None
        await self.application.update_queue.put(update)

    async def lifecycle(self, app: web.Application) -> AsyncIterator[None]:
        """aiohttp `cleanup_ctx`: start with the server, stop before it is torn down."""
        await self.start()
        try:
            yield
        finally:
            await self.stop()

    async def start(self) -> None:
        """Open the state, build PTB, connect (or keep trying in the background)."""
        self.db = TelegramDB(self.deps.data_dir / "telegram.db")
        self.application = build_application(self.cfg, self._creds.token)
        self.handlers = self._wire(self.application, self.db)
        try:
            await asyncio.wait_for(self._connect(), CONNECT_TIMEOUT_S)
        except InvalidToken:
            await self.stop()
            raise ConfigError(
                f"telegram.token_env: the Bot API at {self.cfg.api_url} rejected the token in ${self.cfg.token_env}"
            ) from None
        except Exception as exc:  # unreachable, or an answer PTB cannot use (no `result`): keep serving
            log.warning(
                "telegram: cannot use the Bot API at %s yet (%s); tap keeps serving and retries in the background",
                self.cfg.api_url,
                _why(exc),
            )
            self._connector = create_task(self._keep_connecting(), name="telegram-connect")

    def _wire(self, application: BotApplication, db: TelegramDB) -> Handlers:
        sender = Sender(application.bot)
        deps = self.deps
        conversations = ChatResponder(
            self.cfg,
            db=db,
            intercept=deps.intercept,
            ledger=deps.ledger,
            model=self.model,
            sender=sender,
            typing_interval_s=self.typing_interval_s,
        )
        commands = Commands(
            db=db, memories=deps.memories, ledger=deps.ledger, conversations=conversations, sender=sender
        )
        handlers = Handlers(self.cfg, db=db, conversations=conversations, commands=commands, sender=sender)
        handlers.install(application)
        return handlers

    async def _connect(self) -> None:
        """getMe, then start processing; the webhook accepts updates from here on."""
        assert self.application is not None and self.handlers is not None
        await self.application.initialize()
        bot = self.application.bot
        self.handlers.connected(bot.id, bot.username or "")
        await self.application.start()
        self.ready = True
        log.info("telegram: bot @%s is ready; webhook at POST %s", bot.username, self.cfg.path)

    async def _keep_connecting(self) -> None:
        delay = FIRST_RETRY_S
        while not self.ready:
            await asyncio.sleep(delay)
            try:
                await asyncio.wait_for(self._connect(), CONNECT_TIMEOUT_S)
            except InvalidToken:
                log.error("telegram: the Bot API rejected the token in $%s; the bridge stays off", self.cfg.token_env)
                return
            except Exception as exc:
                log.warning("telegram: still cannot use the Bot API (%s)", _why(exc))
                delay = min(MAX_BACKOFF_S, delay * 2)

    async def stop(self) -> None:
        """Finish running handlers, shut PTB down, close the model client and the state."""
        self.ready = False
        if self._connector is not None:
            self._connector.cancel()
            await asyncio.gather(self._connector, return_exceptions=True)
            self._connector = None
        if self.application is not None:
            await _shutdown(self.application)
            self.application = None
        await self.model.close()
        if self.db is not None:
            self.db.close()
            self.db = None


def _why(exc: Exception) -> str:
    """A one-line reason without the token: a network error's text, or what the answer lacked."""
    if isinstance(exc, TelegramError | OSError | TimeoutError):
        return redact(str(exc)) or type(exc).__name__
    return f"unexpected answer: {type(exc).__name__}: {redact(str(exc))}"


async def _shutdown(application: BotApplication) -> None:
    """Stop and shut down whatever part of PTB got started."""
    try:
        if application.running:
            await application.stop()
        await application.shutdown()
        await application.bot.shutdown()  # a no-op after a full shutdown; closes httpx after a failed getMe
    except Exception:
        log.exception("telegram: error while shutting down")


telegram_key = web.AppKey("tap_telegram", TelegramBridge)
TAKEN_PREFIXES = ("/tap", "/v1", "/api", "/ui")


def check_path(path: str) -> None:
    """ConfigError when `[telegram] path` lies under routes tap already serves (admin API, proxy, web page)."""
    first = "/" + path.strip("/").split("/", 1)[0]
    if first in TAKEN_PREFIXES:
        raise ConfigError(
            f"telegram.path: {path!r} is under {first}, which tap's admin API, proxy or web page serves; "
            'use a path of its own, e.g. "/telegram/webhook"'
        )


def add_telegram(
    app: web.Application, deps: TelegramDeps, *, typing_interval_s: float = TYPING_INTERVAL_S
) -> TelegramBridge:
    """Register the webhook route and the bridge's lifecycle on `app` (before the app starts)."""
    check_path(deps.config.path)
    creds = read_credentials(deps.config)
    bridge = TelegramBridge(deps, creds, deps.make_reply_model(deps.config), typing_interval_s=typing_interval_s)
    app.router.add_post(deps.config.path, bridge.webhook.handle)
    app.cleanup_ctx.append(bridge.lifecycle)
    app[telegram_key] = bridge
    return bridge


__all__ = ["TelegramBridge", "TelegramDeps", "add_telegram", "build_application", "telegram_key"]
