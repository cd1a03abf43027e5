"""The chat model behind the Telegram bot, as the core sees it (the port store.llm.replies implements)."""

from __future__ import annotations

from typing import Protocol

from tap.intercept.dialects import Dialect, JsonObject
from tap.llm.contract import ChatReply

__all__ = ["ReplyModel"]


class ReplyModel(Protocol):
    """A chat model behind the Telegram bot; `make_reply_model` (store.llm) builds the configured one.

    A call returns a `ChatReply` with non-empty text, or raises `tap.errors.ProviderError` whose
    message names the provider URL and model (never the API key)."""

    dialect: Dialect

    async def complete(self, request: JsonObject) -> ChatReply:
        """Answer one request in `dialect`'s shape (possibly with memories injected)."""
        ...

    async def close(self) -> None:
        """Release the HTTP connections."""
        ...
