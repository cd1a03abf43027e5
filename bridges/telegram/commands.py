"""The bot's commands: /start /memories /forget /remember /private /usage /retry.

Every command acts on the scope of the chat (or forum topic) it was sent in — never on a scope
named by the user — so `/forget <id>` cannot touch another chat's memory even with its id, and
`/memories` never lists another chat's. `/forget all` asks first: it answers with two buttons
whose confirmation nonce is bound to the chat, to the user who asked, and to `CONFIRM_TTL_S`;
confirmed, it also drops the chat's conversation still waiting for extraction (MemoryService
.forget_scope), so no memory comes back later.
Store work runs in a worker thread (embedding and Chroma are blocking).
"""

from __future__ import annotations

import asyncio
import html
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from telegram import InlineKeyboardButton, InlineKeyboardMarkup

from bridges.telegram.chats import ChatKey
from bridges.telegram.conversation import ChatResponder
from bridges.telegram.db import TelegramDB
from bridges.telegram.send import Sender
from tap.extract.costs import CostLedger
from tap.memories.service import MemoryService
from tap.records import Memory
from tap.validate import safe_day

PAGE_SIZE = 10
SNIPPET_CHARS = 300
CONFIRM_TTL_S = 300.0
MEMORIES_PREFIX = "mem:"
FORGET_ALL_PREFIX = "forget-all:"
FORGET_CANCEL = "forget-cancel"


def snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    """One line of at most `limit` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def day(stamp: float) -> str:
    """YYYY-MM-DD (UTC) of a timestamp."""
    shown = safe_day(stamp)
    return shown.isoformat() if shown else "undated"


def start_text(key: ChatKey) -> str:
    """What the bot remembers and how to control it."""
    where = "this group" if key.is_group else "this chat"
    never = "in your private chats or in other groups" if key.is_group else "in a group or to anyone else"
    return (
        "<b>Hi! I am a chat bot with a long-term memory.</b>\n\n"
        f"What is said in {where} — your messages and my replies — is remembered for {where} only, "
        f"never shown {never}. Memories are extracted in the background a little while after "
        "we talk, and I use them in later answers.\n\n"
        "/memories — what I remember here\n"
        "/remember &lt;text&gt; — remember something right now\n"
        "/forget &lt;id&gt; — forget one memory (ids are in /memories)\n"
        "/forget all — forget everything I remember here, and this chat's history\n"
        "/private — do not store your next message\n"
        "/retry — try again when I could not answer\n"
        "/usage — tokens and cost today"
    )


def memory_page(memories: list[Memory], page: int, has_more: bool) -> tuple[str, InlineKeyboardMarkup | None]:
    """One page of memories as HTML, with previous/next buttons."""
    if not memories:
        text = "I do not remember anything about this chat yet." if page == 0 else "No more memories."
        return text + " Tell me about yourself, or use /remember &lt;text&gt;.", None
    first = page * PAGE_SIZE + 1
    lines = [f"<b>What I remember here</b> (page {page + 1})"]
    for number, memory in enumerate(memories, start=first):
        lines.append(
            f"{number}. {html.escape(snippet(memory.content), quote=False)}\n"
            f"    <code>{memory.id}</code> · {day(memory.valid_from or memory.created_at)} · {memory.kind}"
        )
    buttons = []
    if page > 0:
        buttons.append(InlineKeyboardButton("‹ Newer", callback_data=f"{MEMORIES_PREFIX}{page - 1}"))
    if has_more:
        buttons.append(InlineKeyboardButton("Older ›", callback_data=f"{MEMORIES_PREFIX}{page + 1}"))
    return "\n".join(lines), InlineKeyboardMarkup([buttons]) if buttons else None


def usage_text(today: dict[str, Any]) -> str:
    """The cost ledger's day as HTML."""
    lines = [f"<b>Usage today</b> ({today['day']}, UTC)"]
    for call in today["calls"]:
        lines.append(
            f"{html.escape(call['purpose'])} · {html.escape(call['provider'])} {html.escape(call['model'])}: "
            f"{call['calls']} calls, {call['input_tokens']:,} tokens in, {call['output_tokens']:,} out, "
            f"${call['cost_usd']:.4f}"
        )
    if not today["calls"]:
        lines.append("No model calls yet today.")
    lines.append(f"Total: ${today['cost_usd']:.4f}")
    return "\n".join(lines)


@dataclass(frozen=True)
class Call:
    """One command as typed: in which chat, by whom, with which arguments."""

    key: ChatKey
    user_id: int
    args: list[str]
    message_id: int


Command = Callable[[Call], Awaitable[None]]


class Commands:
    """Command handlers over the chat's scope."""

    def __init__(
        self,
        *,
        db: TelegramDB,
        memories: MemoryService,
        ledger: CostLedger,
        conversations: ChatResponder,
        sender: Sender,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.db = db
        self.memories = memories
        self.ledger = ledger
        self.conversations = conversations
        self.sender = sender
        self._now = now
        self._confirmations: dict[str, tuple[str, int, float]] = {}

    def table(self) -> dict[str, Command]:
        """Command name → handler (what the PTB CommandHandler is registered for)."""
        return {
            "start": self.start,
            "help": self.start,
            "memories": self.list_memories,
            "remember": self.remember,
            "forget": self.forget,
            "private": self.private,
            "retry": self.retry,
            "usage": self.usage,
        }

    async def _say(self, call: Call, markup: str, buttons: InlineKeyboardMarkup | None = None) -> None:
        reply_to = call.message_id if call.key.is_group else None
        await self.sender.html(call.key, markup, reply_to=reply_to, buttons=buttons)

    async def start(self, call: Call) -> None:
        """/start and /help."""
        await self._say(call, start_text(call.key))

    async def memories_page(self, key: ChatKey, page: int) -> tuple[str, InlineKeyboardMarkup | None]:
        """The HTML and buttons of one page of the chat's memories."""
        found = await asyncio.to_thread(
            self.memories.list_memories, scope=key.scope, limit=PAGE_SIZE + 1, offset=page * PAGE_SIZE
        )
        return memory_page(found[:PAGE_SIZE], page, len(found) > PAGE_SIZE)

    async def list_memories(self, call: Call) -> None:
        """/memories [page]."""
        first = call.args[0] if call.args else ""
        page = int(first) - 1 if first.isdigit() and int(first) > 0 else 0
        markup, buttons = await self.memories_page(call.key, page)
        await self._say(call, markup, buttons)

    async def remember(self, call: Call) -> None:
        """/remember <text>."""
        text = " ".join(call.args).strip()
        if not text:
            await self._say(call, "Usage: /remember &lt;text&gt;, e.g. <code>/remember I am vegetarian</code>")
            return
        memory = await asyncio.to_thread(
            self.memories.add,
            scope=call.key.scope,
            content=text,
            source="telegram",
            importance=4,
            conversation=call.key.conversation,
        )
        await self._say(call, f"Remembered (<code>{memory.id}</code>).")

    async def forget(self, call: Call) -> None:
        """/forget <id>… or /forget all (which asks first)."""
        if not call.args:
            await self._say(call, "Usage: /forget &lt;id&gt; (ids are in /memories) or /forget all")
        elif call.args[0].lower() == "all":
            await self._ask_forget_all(call)
        else:
            await self._say(call, "\n".join([await self._forget_one(call.key, memory_id) for memory_id in call.args]))

    async def _forget_one(self, key: ChatKey, memory_id: str) -> str:
        memory = await asyncio.to_thread(self.memories.get, memory_id)
        if memory is None or memory.scope != key.scope:
            return f"I have no memory <code>{html.escape(memory_id)}</code> in this chat."
        removed = await asyncio.to_thread(self.memories.forget, memory_id)
        versions = f" ({len(removed)} versions)" if len(removed) > 1 else ""
        return f"Forgotten{versions}: {html.escape(snippet(memory.content, 120), quote=False)}"

    async def _ask_forget_all(self, call: Call) -> None:
        nonce = secrets.token_urlsafe(9)
        self._confirmations[call.key.scope] = (nonce, call.user_id, self._now() + CONFIRM_TTL_S)
        yes = InlineKeyboardButton("Yes, forget everything", callback_data=FORGET_ALL_PREFIX + nonce)
        cancel = InlineKeyboardButton("Cancel", callback_data=FORGET_CANCEL)
        text = "Forget <b>everything</b> I remember about this chat, and its chat history? This cannot be undone."
        await self._say(call, text, InlineKeyboardMarkup([[yes, cancel]]))

    async def confirm_forget_all(self, key: ChatKey, user_id: int, nonce: str) -> str:
        """The confirmation button; returns the new text of the question message."""
        expected = self._confirmations.get(key.scope)
        if expected is None or expected[2] < self._now() or not secrets.compare_digest(expected[0], nonce):
            return "This confirmation has expired; send /forget all again."
        if expected[1] != user_id:
            return "Only the person who asked can confirm; send /forget all yourself."
        del self._confirmations[key.scope]
        removed = await asyncio.to_thread(self.memories.forget_scope, key.scope)
        turns = self.db.clear_history(key.conversation)
        memories = "memory" if removed == 1 else "memories"
        messages = "message" if turns == 1 else "messages"
        return f"Done: forgot {removed} {memories} and {turns} {messages} of chat history."

    def cancel_forget_all(self, key: ChatKey) -> str:
        """The cancel button."""
        self._confirmations.pop(key.scope, None)
        return "Cancelled: nothing was forgotten."

    async def private(self, call: Call) -> None:
        """/private: the user's next message here is answered but not stored."""
        self.db.set_private_next(call.key.scope, call.user_id)
        await self._say(
            call, "OK: your next message here will be answered (with memories) but not stored or remembered."
        )

    async def usage(self, call: Call) -> None:
        """/usage: tokens and cost today (bot replies and memory extraction)."""
        today = await asyncio.to_thread(self.ledger.today)
        await self._say(call, usage_text(today))

    async def retry(self, call: Call) -> None:
        """/retry: answer the newest message I could not answer."""
        if not await self.conversations.retry(call.key):
            await self._say(call, "There is nothing to retry: I have answered every message here.")
