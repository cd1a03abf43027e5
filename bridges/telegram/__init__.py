"""The Telegram bridge: a memory-backed chat bot served by tap's own webhook (docs/architecture.md, Scopes).

Telegram → `POST [telegram] path` on tap's port → python-telegram-bot handlers → tap's
interception core (tap.intercept.core: recall from the chat's scope, injected as the proxy does) →
the configured model → the reply back to Telegram → the core's after-step (turn log, then the
ingestion entry point, `source = "telegram"`).

Public surface (for the composition root and the CLI only):
- `add_telegram(app, deps)` / `TelegramDeps`: wire the bridge into the aiohttp app of `tap serve`;
- `bridges.telegram.botapi`: `set_webhook` / `delete_webhook` / `webhook_info` for the CLI.

Modules: webhook (secret, parse, dedup), bridge (PTB lifecycle), handlers (gate + callbacks),
conversation (one turn), commands, model (the request the chat model answers; the model itself is
a `tap.intercept.reply_model.ReplyModel` the composition root hands in), send (split/format/429), markdown, split,
chats (scopes), access (who may talk), db (SQLite state), credentials, redact (no token in logs),
botapi (webhook management).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bridges.telegram.bridge import TelegramBridge, TelegramDeps, add_telegram, telegram_key

__all__ = ["TelegramBridge", "TelegramDeps", "add_telegram", "telegram_key"]


def __getattr__(name: str) -> Any:
    """The bridge's public names, imported on first use (python-telegram-bot and the model SDKs
    take seconds to import; `tap serve` without Telegram and `tap telegram info` need none of it)."""
    if name in __all__:
        return getattr(importlib.import_module("bridges.telegram.bridge"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
