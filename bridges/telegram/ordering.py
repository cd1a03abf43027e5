"""Process each chat's updates one at a time, in arrival order; different chats concurrently.

PTB's default concurrent processing can reorder updates of one chat (a `/forget all` could run
before the message sent just ahead of it, two messages could interleave their history). This
update processor takes a per-chat lock inside PTB's concurrency limit. Locks are granted in FIFO
order, and PTB starts update tasks in the order the webhook queued them, so a chat's updates run
in the order Telegram delivered them.

Invariants: at most one handler runs per chat at any time; updates without a chat run unordered;
the lock table holds only chats with work in flight (weak values).
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable
from typing import Any

from telegram import Update
from telegram.ext import BaseUpdateProcessor


class ChatOrderedProcessor(BaseUpdateProcessor):
    """`concurrent_updates(...)` processor: per-chat order, cross-chat concurrency."""

    def __init__(self, max_concurrent_updates: int) -> None:
        super().__init__(max_concurrent_updates)
        self._locks: weakref.WeakValueDictionary[int, asyncio.Lock] = weakref.WeakValueDictionary()

    def _lock(self, chat_id: int) -> asyncio.Lock:
        lock = self._locks.get(chat_id)
        if lock is None:
            lock = asyncio.Lock()
            self._locks[chat_id] = lock
        return lock

    async def do_process_update(self, update: object, coroutine: Awaitable[Any]) -> None:
        """Await the handler coroutine while holding the chat's lock."""
        try:
            chat = update.effective_chat if isinstance(update, Update) else None
            lock = None if chat is None else self._lock(chat.id)
        except BaseException:  # a malformed update (an unhashable chat id): the handler never runs
            close = getattr(coroutine, "close", None)
            if close is not None:
                close()  # so it is not left behind, never awaited
            raise
        if lock is None:
            await coroutine
            return
        async with lock:
            await coroutine

    async def initialize(self) -> None:
        """Nothing to set up."""

    async def shutdown(self) -> None:
        """Nothing to release."""
