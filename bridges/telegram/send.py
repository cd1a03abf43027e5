"""Sending to Telegram: long answers split, Markdown rendered safely.

- `Sender.markdown`: a model answer, split at 4,096 characters (bridges.telegram.split), each
  chunk rendered to HTML (bridges.telegram.markdown); a chunk whose markers cross goes out as
  plain text, and when Telegram still answers 400 "can't parse entities" the chunk is re-sent as
  plain text (its Markdown source, which reads fine as is);
- `Sender.html`: tap's own HTML (command answers), with the same plain-text fallback;
- flood limits are PTB's `AIORateLimiter`, set on the application (bridges.telegram.bridge): it
  keeps under Telegram's limits (30 messages a second in all, 20 a minute per group) and, on a
  429 all the same, waits the seconds Telegram asks for and tries again, holding the bot's other
  calls meanwhile;
- `keep_typing`: the "typing" chat action every `interval` seconds until stopped (Telegram shows
  it for ~5 s); failures there are logged at debug level and never disturb the reply.
Invariants: replies go to the chat and forum topic they answer; in groups the first chunk replies
to the user's message (and still goes out if that message was deleted).
"""

from __future__ import annotations

import asyncio
import html
import logging
import os
import re
from collections.abc import Awaitable, Callable

from telegram import Bot, InlineKeyboardMarkup, Message, ReplyParameters
from telegram.constants import ChatAction, ParseMode
from telegram.error import BadRequest, TelegramError

from bridges.telegram.chats import ChatKey
from bridges.telegram.markdown import to_html
from bridges.telegram.split import split_message

log = logging.getLogger(__name__)
_TAGS = re.compile(r"<[^>]+>")
Sleep = Callable[[float], Awaitable[None]]


def use_timedelta_periods() -> None:
    """Opt in to PTB's future `timedelta` time periods (its documented switch, `PTB_TIMEDELTA`).

    Without it PTB 22 emits a deprecation warning from inside `RetryAfter.__init__` on every 429,
    which a program running with warnings as errors (tap's tests) turns into a failed request.
    """
    os.environ.setdefault("PTB_TIMEDELTA", "true")


def entities_rejected(exc: TelegramError) -> bool:
    """True for Telegram's "can't parse entities" (bad formatting, not a bad request otherwise)."""
    return isinstance(exc, BadRequest) and "can't parse entities" in exc.message.lower()


def plain_text(markup: str) -> str:
    """tap's HTML as plain text (tags removed, entities decoded)."""
    return html.unescape(_TAGS.sub("", markup))


class Sender:
    """Bot API calls with formatting fallbacks (flood limits: the application's rate limiter)."""

    def __init__(self, bot: Bot) -> None:
        self.bot = bot

    async def call[T](self, make: Callable[[], Awaitable[T]]) -> T:
        """`await make()`: one place every Bot API call of the bridge goes through."""
        return await make()

    async def markdown(self, key: ChatKey, text: str, *, reply_to: int | None = None) -> list[Message]:
        """Send a model answer (split, rendered, with fallbacks); returns the messages sent."""
        sent: list[Message] = []
        for index, chunk in enumerate(split_message(text)):
            markup = to_html(chunk)
            target = reply_to if index == 0 else None
            sent.append(await self._send(key, markup, chunk, reply_to=target))
        return sent

    async def html(
        self, key: ChatKey, markup: str, *, reply_to: int | None = None, buttons: InlineKeyboardMarkup | None = None
    ) -> Message:
        """Send tap's own HTML (falls back to plain text if Telegram rejects it)."""
        return await self._send(key, markup, plain_text(markup), reply_to=reply_to, buttons=buttons)

    async def edit_html(
        self, chat_id: int, message_id: int, markup: str, *, buttons: InlineKeyboardMarkup | None = None
    ) -> None:
        """Replace the text of one of the bot's messages."""
        await self.call(
            lambda: self.bot.edit_message_text(
                markup, chat_id=chat_id, message_id=message_id, parse_mode=ParseMode.HTML, reply_markup=buttons
            )
        )

    async def _send(
        self,
        key: ChatKey,
        markup: str | None,
        plain: str,
        *,
        reply_to: int | None,
        buttons: InlineKeyboardMarkup | None = None,
    ) -> Message:
        reply = ReplyParameters(reply_to, allow_sending_without_reply=True) if reply_to is not None else None

        def send(text: str, parse_mode: str | None) -> Awaitable[Message]:
            return self.bot.send_message(
                key.chat_id,
                text,
                parse_mode=parse_mode,
                message_thread_id=key.thread_id,
                reply_parameters=reply,
                reply_markup=buttons,
            )

        if markup is None:
            return await self.call(lambda: send(plain, None))
        try:
            return await self.call(lambda: send(markup, ParseMode.HTML))
        except TelegramError as exc:
            if not entities_rejected(exc):
                raise
            log.info("telegram: formatting rejected (%s); sending plain text", exc.message)
            return await self.call(lambda: send(plain, None))

    async def typing(self, key: ChatKey) -> None:
        """One "typing" action (errors are logged, not raised)."""
        try:
            await self.bot.send_chat_action(key.chat_id, ChatAction.TYPING, message_thread_id=key.thread_id)
        except TelegramError as exc:
            log.debug("telegram: typing action failed: %s", exc)


async def keep_typing(sender: Sender, key: ChatKey, stop: asyncio.Event, interval: float) -> None:
    """Send "typing" now and every `interval` seconds until `stop` is set."""
    while not stop.is_set():
        await sender.typing(key)
        try:
            await asyncio.wait_for(stop.wait(), interval)
        except TimeoutError:
            continue
