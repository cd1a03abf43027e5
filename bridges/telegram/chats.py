"""Where a Telegram message belongs: its memory scope, its conversation, and where replies go.

docs/architecture.md, Scopes: one scope per chat, so a private chat's memories never reach a group and a group's
never reach a private chat; a private chat's id is its user's id, so one user's memories never
reach another user. Forum topics of a supergroup are separate conversations *and* scopes.

Scope names (valid `x-tap-scope` / `--scope` values, so `tap memories list --scope …` works):

    telegram:private:<user id>
    telegram:group:<chat id>                 (groups and supergroups; ids are negative)
    telegram:group:<chat id>:topic:<thread>  (a forum topic)

Invariants: the key is computed from the chat (and the topic) only, never from the sender or
the text, so nothing a user writes can move a message into another scope; the conversation id
equals the scope (one running conversation per chat or topic).
"""

from __future__ import annotations

from dataclasses import dataclass

from telegram import Chat, Message


@dataclass(frozen=True)
class ChatKey:
    """One chat, or one forum topic of a chat."""

    chat_id: int
    kind: str  # "private" or "group"
    thread_id: int | None = None

    @property
    def scope(self) -> str:
        """The memory scope of this chat (or topic)."""
        base = f"telegram:{self.kind}:{self.chat_id}"
        return base if self.thread_id is None else f"{base}:topic:{self.thread_id}"

    @property
    def conversation(self) -> str:
        """The conversation id used for chat history and ingestion."""
        return self.scope

    @property
    def is_group(self) -> bool:
        """True for groups and supergroups."""
        return self.kind == "group"


def is_group_chat(chat: Chat) -> bool:
    """Groups and supergroups (channels are not chats tap talks in)."""
    return chat.type in (Chat.GROUP, Chat.SUPERGROUP)


def chat_key(message: Message) -> ChatKey | None:
    """The key of the chat a message was sent in; None for channels and unknown chat types."""
    chat = message.chat
    if chat.type == Chat.PRIVATE:
        return ChatKey(chat.id, "private")
    if is_group_chat(chat):
        topic = message.message_thread_id if message.is_topic_message else None
        return ChatKey(chat.id, "group", topic)
    return None


def author_name(message: Message) -> str:
    """How the sender is named in history and memories ("" when unknown)."""
    user = message.from_user
    if user is None:
        return ""
    return user.first_name or user.username or str(user.id)
