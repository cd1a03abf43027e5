"""Webhook management over the Bot API (`tap telegram set-webhook | delete-webhook | info`).

`set_webhook` registers the URL with the secret token from `[telegram] secret_env`, limits
`allowed_updates` to what tap handles (`ALLOWED_UPDATES`: plain messages and our buttons; edits,
reactions, channel posts … are never even sent), optionally drops pending updates, and publishes
the command list (`setMyCommands`) so Telegram clients offer it in the menu.

Invariants: every call goes to `[telegram] api_url`; errors are `TapError`s in plain words that
never contain the token (InvalidToken names it; bridges.telegram.redact scrubs every message).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

from telegram import Bot, BotCommand, WebhookInfo
from telegram.error import BadRequest, InvalidToken, NetworkError, TelegramError

from bridges.telegram.credentials import bot_url, file_url, read_credentials, read_token
from bridges.telegram.redact import redact
from bridges.telegram.send import use_timedelta_periods
from bridges.telegram.webhook import HANDLED_UPDATES
from tap.config import TelegramConfig
from tap.errors import TapError

ALLOWED_UPDATES = tuple(sorted(HANDLED_UPDATES, reverse=True))  # ("message", "callback_query")
WEBHOOK_PORTS = (443, 80, 88, 8443)
BOT_COMMANDS = (
    BotCommand("start", "What I remember and how to control it"),
    BotCommand("memories", "What I remember about this chat"),
    BotCommand("remember", "Remember something now: /remember <text>"),
    BotCommand("forget", "Forget a memory: /forget <id> or /forget all"),
    BotCommand("private", "Do not store my next message"),
    BotCommand("retry", "Answer my last message again"),
    BotCommand("usage", "Tokens and cost today"),
)


def check_webhook_url(url: str, path: str) -> list[str]:
    """ValueError when Telegram would refuse `url`; warnings (e.g. another path than tap's) otherwise."""
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.hostname:
        raise ValueError(f"Telegram only delivers webhooks to https:// URLs, got {url!r}")
    port = parts.port or 443
    if port not in WEBHOOK_PORTS:
        raise ValueError(f"Telegram only delivers webhooks to ports 443, 80, 88 or 8443, got {port}")
    if parts.path.rstrip("/") != path.rstrip("/"):
        shown = parts.path or "/"
        return [f"the URL's path {shown!r} is not [telegram] path {path!r}; fine only if a proxy rewrites it"]
    return []


@contextlib.asynccontextmanager
async def connected(cfg: TelegramConfig, token: str) -> AsyncIterator[Bot]:
    """An initialised Bot for `[telegram] api_url`, with Bot API errors turned into TapErrors."""
    use_timedelta_periods()
    try:
        async with Bot(token, base_url=bot_url(cfg), base_file_url=file_url(cfg)) as bot:
            yield bot
    except InvalidToken:
        raise TapError(f"the Bot API at {cfg.api_url} rejected the token in ${cfg.token_env}") from None
    except BadRequest as exc:  # a NetworkError subclass in PTB, but an answer, not a network failure
        raise TapError(f"the Bot API refused: {redact(exc.message)}") from None
    except NetworkError as exc:
        raise TapError(f"cannot reach the Bot API at {cfg.api_url}: {redact(exc.message)}") from None
    except TelegramError as exc:
        raise TapError(f"the Bot API refused: {redact(exc.message)}") from None


def describe(info: WebhookInfo, bot: Bot) -> dict[str, Any]:
    """The webhook status as JSON-able builtins."""
    return {
        "bot": f"@{bot.username}",
        "url": info.url,
        "pending_update_count": info.pending_update_count,
        "allowed_updates": list(info.allowed_updates),
        "max_connections": info.max_connections,
        "ip_address": info.ip_address,
        "last_error_date": info.last_error_date.isoformat() if info.last_error_date else None,
        "last_error_message": info.last_error_message,
    }


async def set_webhook(cfg: TelegramConfig, url: str, *, drop_pending_updates: bool) -> dict[str, Any]:
    """Point Telegram at `url` (with the secret and tap's update types); returns the new status."""
    creds = read_credentials(cfg)
    async with connected(cfg, creds.token) as bot:
        await bot.set_webhook(
            url,
            allowed_updates=list(ALLOWED_UPDATES),
            drop_pending_updates=drop_pending_updates,
            secret_token=creds.secret,
        )
        await bot.set_my_commands(list(BOT_COMMANDS))
        return describe(await bot.get_webhook_info(), bot)


async def delete_webhook(cfg: TelegramConfig, *, drop_pending_updates: bool) -> dict[str, Any]:
    """Remove the webhook (Telegram keeps updates for 24 h unless dropped); returns the new status."""
    async with connected(cfg, read_token(cfg)) as bot:
        await bot.delete_webhook(drop_pending_updates=drop_pending_updates)
        return describe(await bot.get_webhook_info(), bot)


async def webhook_info(cfg: TelegramConfig) -> dict[str, Any]:
    """The bot and its webhook as Telegram sees them."""
    async with connected(cfg, read_token(cfg)) as bot:
        return describe(await bot.get_webhook_info(), bot)
