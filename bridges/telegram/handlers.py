"""python-telegram-bot handlers: one thin callback per event, a gate in front, an error handler.

Group -1 holds the gate (a `TypeHandler` that sees every update first):
- a `message` is judged by bridges.telegram.access: refused senders/groups get the polite
  refusal once (then silence) and nothing about them is stored; messages not addressed to the
  bot in a group, and messages without text (stickers, photos, …) are ignored;
- a `callback_query` (our buttons) passes only for allowed users in chats the bot may talk in;
- every other update type (edits, reactions, polls, …) is ignored politely: no reply, no error.
Whatever the gate stops raises `ApplicationHandlerStop`, so group 0 never sees it.

Group 0: the commands, plain text (→ bridges.telegram.conversation), our buttons, and a
catch-all for unknown commands. Only `message` updates reach commands and text (edited
messages are not answered twice). Errors are logged by the error handler (the token is redacted
from every log record by bridges.telegram.redact).
"""

from __future__ import annotations

import logging
from typing import Any

from telegram import CallbackQuery, Message, Update
from telegram.ext import (
    Application,
    ApplicationHandlerStop,
    CallbackQueryHandler,
    CommandHandler,
    ContextTypes,
    MessageHandler,
    TypeHandler,
    filters,
)

from bridges.telegram.access import BotIdentity, Verdict, decide, strip_mention, user_allowed
from bridges.telegram.chats import ChatKey, author_name, chat_key
from bridges.telegram.commands import FORGET_ALL_PREFIX, FORGET_CANCEL, MEMORIES_PREFIX, Call, Commands
from bridges.telegram.conversation import ChatResponder, Incoming
from bridges.telegram.db import TelegramDB
from bridges.telegram.send import Sender
from tap.config import TelegramConfig

log = logging.getLogger(__name__)
Context = ContextTypes.DEFAULT_TYPE
BotApplication = Application[Any, Any, Any, Any, Any, Any]
"""The Telegram bot: python-telegram-bot's `Application` (not the web app, not the runtime)."""

REFUSE_USER = (
    "Sorry, I am a private memory bot and only talk to the people my owner allowed. "
    "Your Telegram user id is <code>{id}</code>: my owner can add it to <code>[telegram] allowed_users</code>."
)
REFUSE_GROUP = "Sorry, I only talk in private chats (my owner has not enabled groups)."


def update_kind(update: Update) -> str:
    """The name of the update's payload field (message, edited_message, message_reaction, …)."""
    for name in Update.ALL_TYPES:
        if getattr(update, name, None) is not None:
            return str(name)
    return "unknown"


class Handlers:
    """The callbacks PTB calls, bound to tap's services."""

    def __init__(
        self,
        cfg: TelegramConfig,
        *,
        db: TelegramDB,
        conversations: ChatResponder,
        commands: Commands,
        sender: Sender,
    ) -> None:
        self.cfg = cfg
        self.db = db
        self.conversations = conversations
        self.commands = commands
        self.sender = sender
        self.me = BotIdentity(0, "")

    def connected(self, bot_id: int, username: str) -> None:
        """Learn who the bot is (from getMe); needed to tell when a group message is for it."""
        self.me = BotIdentity(bot_id, username, frozenset(self.commands.table()))

    def install(self, application: BotApplication) -> None:
        """Register every handler on the application."""
        only_messages = filters.UpdateType.MESSAGE
        application.add_handler(TypeHandler(Update, self.gate), group=-1)
        application.add_handler(CommandHandler(list(self.commands.table()), self.command, filters=only_messages))
        application.add_handler(MessageHandler(only_messages & filters.TEXT & ~filters.COMMAND, self.text))
        application.add_handler(MessageHandler(only_messages & filters.COMMAND, self.unknown_command))
        application.add_handler(CallbackQueryHandler(self.button))
        application.add_error_handler(self.error)

    # --- the gate ------------------------------------------------------------------------------

    async def gate(self, update: Update, context: Context) -> None:
        """Let through only what tap handles, from whom it may (see the module docstring)."""
        if update.callback_query is not None:
            if not await self._button_allowed(update.callback_query):
                raise ApplicationHandlerStop
            return
        message = update.message
        if message is None:
            log.debug("telegram: ignoring a %s update", update_kind(update))
            raise ApplicationHandlerStop
        verdict = decide(self.cfg, message, self.me)
        if verdict is Verdict.ALLOW and message.text:
            return
        if verdict is Verdict.REFUSE_USER or verdict is Verdict.REFUSE_GROUP:
            await self._refuse(message, verdict)
        raise ApplicationHandlerStop

    async def _refuse(self, message: Message, verdict: Verdict) -> None:
        key = chat_key(message)
        user = message.from_user
        if key is None or user is None:
            return
        who = f"user:{user.id}" if verdict is Verdict.REFUSE_USER else f"chat:{key.chat_id}"
        if not self.db.first_refusal(who):
            return
        log.info(
            "telegram: refused %s (%s); allow it in [telegram] allowed_users / allow_groups", who, author_name(message)
        )
        text = REFUSE_USER.format(id=user.id) if verdict is Verdict.REFUSE_USER else REFUSE_GROUP
        await self.sender.html(key, text, reply_to=message.message_id if key.is_group else None)

    async def _button_allowed(self, query: CallbackQuery) -> bool:
        message = query.message
        key = chat_key(message) if isinstance(message, Message) else None
        allowed = key is not None and user_allowed(self.cfg, query.from_user.id)
        if key is not None and key.is_group and not self.cfg.allow_groups:
            allowed = False
        if not allowed:
            await self.sender.call(lambda: query.answer("Sorry, this button is not for you."))
        return allowed

    # --- group 0 -------------------------------------------------------------------------------

    async def text(self, update: Update, context: Context) -> None:
        """A text message for the model."""
        message, key = _message_and_key(update)
        user = message.from_user
        if user is None:
            return
        text = strip_mention(message.text or "", self.me) if key.is_group else (message.text or "").strip()
        if not text:
            return
        private = self.db.take_private_next(key.scope, user.id)
        await self.conversations.on_message(
            Incoming(key, message.message_id, user.id, author_name(message), text, private=private)
        )

    async def command(self, update: Update, context: Context) -> None:
        """Run one of tap's commands (see bridges.telegram.commands)."""
        message, key = _message_and_key(update)
        name = (message.text or "/").split(maxsplit=1)[0][1:].split("@", 1)[0].lower()
        run = self.commands.table().get(name)
        if run is not None:
            user_id = message.from_user.id if message.from_user else 0
            await run(Call(key, user_id, list(context.args or []), message.message_id))

    async def unknown_command(self, update: Update, context: Context) -> None:
        """A command tap does not have."""
        message, key = _message_and_key(update)
        await self.sender.html(
            key,
            "I do not know that command; /start lists what I can do.",
            reply_to=message.message_id if key.is_group else None,
        )

    async def button(self, update: Update, context: Context) -> None:
        """Our inline buttons: memory pages and the /forget all confirmation."""
        query = update.callback_query
        if query is None or not isinstance(query.message, Message):
            return
        key = chat_key(query.message)
        data = query.data or ""
        if key is None:
            return
        await self.sender.call(lambda: query.answer())
        chat_id, message_id = key.chat_id, query.message.message_id
        if data.startswith(MEMORIES_PREFIX) and data[len(MEMORIES_PREFIX) :].isdigit():
            markup, buttons = await self.commands.memories_page(key, int(data[len(MEMORIES_PREFIX) :]))
            await self.sender.edit_html(chat_id, message_id, markup, buttons=buttons)
        elif data.startswith(FORGET_ALL_PREFIX):
            outcome = await self.commands.confirm_forget_all(key, query.from_user.id, data[len(FORGET_ALL_PREFIX) :])
            await self.sender.edit_html(chat_id, message_id, outcome)
        elif data == FORGET_CANCEL:
            await self.sender.edit_html(chat_id, message_id, self.commands.cancel_forget_all(key))

    async def error(self, update: object, context: Context) -> None:
        """Log every error a handler raised (first thing, as PTB recommends)."""
        update_id = update.update_id if isinstance(update, Update) else None
        log.error("telegram: handling update %s failed", update_id, exc_info=context.error)


def _message_and_key(update: Update) -> tuple[Message, ChatKey]:
    """The message of an update that passed the gate, and its chat key."""
    message = update.message
    key = chat_key(message) if message is not None else None
    if message is None or key is None:
        raise ApplicationHandlerStop  # cannot happen after the gate; stop quietly
    return message, key
