"""Who may talk to the bot, and when a group message is meant for it (pure over PTB objects).

Rules (`[telegram] allowed_users`, `allow_groups`):
- private chat: the sender must be in `allowed_users`, else REFUSE_USER;
- group or supergroup: only messages *addressed to the bot* count — a mention (`@bot` or a text
  mention of the bot), a reply to one of the bot's messages, a `/command@thisbot`, or one of the
  bot's own commands without a bot name; anything else is IGNOREd (the bot does not read along). An addressed
  message is REFUSE_GROUP when `allow_groups` is false, else the sender must be an allowed user;
- channels, messages without a sender (anonymous admins, channel forwards): IGNORE.
An empty `allowed_users` allows nobody: the bot answers only the people its owner listed.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from telegram import Message, MessageEntity

from bridges.telegram.chats import is_group_chat
from tap.config import TelegramConfig


class Verdict(enum.Enum):
    """What to do with an incoming message."""

    ALLOW = "allow"
    REFUSE_USER = "refuse-user"
    REFUSE_GROUP = "refuse-group"
    IGNORE = "ignore"


@dataclass(frozen=True)
class BotIdentity:
    """The bot as getMe describes it, and the commands it answers."""

    id: int
    username: str
    commands: frozenset[str] = frozenset()


def user_allowed(cfg: TelegramConfig, user_id: int) -> bool:
    """True when `user_id` is in `[telegram] allowed_users`."""
    return user_id in cfg.allowed_users


def _mentions(message: Message, bot: BotIdentity) -> bool:
    handle = "@" + bot.username.lower()
    for entity, text in message.parse_entities([MessageEntity.MENTION, MessageEntity.TEXT_MENTION]).items():
        if entity.type == MessageEntity.MENTION and text.lower() == handle:
            return True
        if entity.type == MessageEntity.TEXT_MENTION and entity.user is not None and entity.user.id == bot.id:
            return True
    return False


def _command_for_bot(message: Message, bot: BotIdentity) -> bool:
    text = message.text or ""
    if not text.startswith("/"):
        return False
    command = text.split(maxsplit=1)[0]
    name, _, target = command[1:].partition("@")
    if target:
        return target.lower() == bot.username.lower()
    return name.lower() in bot.commands  # a bare /command is ours only if we have it


def addressed(message: Message, bot: BotIdentity) -> bool:
    """True when a group message mentions the bot, replies to it, or is a command for it."""
    reply = message.reply_to_message
    if reply is not None and reply.from_user is not None and reply.from_user.id == bot.id:
        return True
    return _mentions(message, bot) or _command_for_bot(message, bot)


def decide(cfg: TelegramConfig, message: Message, bot: BotIdentity) -> Verdict:
    """The verdict for one message (see the module rules)."""
    sender = message.from_user
    if sender is None or sender.is_bot:
        return Verdict.IGNORE
    if message.chat.type == message.chat.PRIVATE:
        return Verdict.ALLOW if user_allowed(cfg, sender.id) else Verdict.REFUSE_USER
    if not is_group_chat(message.chat) or not addressed(message, bot):
        return Verdict.IGNORE
    if not cfg.allow_groups:
        return Verdict.REFUSE_GROUP
    return Verdict.ALLOW if user_allowed(cfg, sender.id) else Verdict.REFUSE_USER


def strip_mention(text: str, bot: BotIdentity) -> str:
    """The text without `@botname` (case-insensitive), whitespace tidied."""
    if not bot.username:
        return text.strip()
    cleaned = re.sub(rf"@{re.escape(bot.username)}\b", " ", text, flags=re.IGNORECASE)
    return re.sub(r"[ \t]{2,}", " ", cleaned).strip()
