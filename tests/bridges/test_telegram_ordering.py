"""The per-chat update processor never leaves a handler coroutine behind, even for a malformed update."""

from __future__ import annotations

import inspect

import pytest
from telegram import Update

from bridges.telegram.ordering import ChatOrderedProcessor


async def test_a_malformed_chat_id_closes_the_handler_instead_of_leaking_it() -> None:
    update = Update.de_json(
        {"update_id": 1, "message": {"message_id": 1, "date": 0, "chat": {"id": [1], "type": "private"}}}, None
    )
    ran: list[bool] = []

    async def handler() -> None:
        ran.append(True)

    coroutine = handler()
    with pytest.raises(TypeError):
        await ChatOrderedProcessor(4).do_process_update(update, coroutine)
    assert inspect.getcoroutinestate(coroutine) == inspect.CORO_CLOSED and ran == []
