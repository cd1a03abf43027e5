"""The request the bot's model answers: the chat history in the provider's own dialect.

`build_request` turns the chat history into a request in the provider's own dialect (Anthropic
Messages, or Ollama `/api/chat`), so the recalled memory block is injected by `tap.intercept.dialects`
exactly as the proxy injects it: one block appended to the last user message, with the system
prompt and earlier turns untouched (prompt caches stay valid from turn to turn).

The model itself is a `tap.intercept.reply_model.ReplyModel`: the composition root hands the bridge a factory
(`TelegramDeps.make_reply_model`, store.llm's SDK clients in `tap serve`), so the bridge imports
no model SDK.

Invariants: consecutive turns of the same role are merged (a pending turn followed by a new
message is one user turn), and the first message is always a user message.
"""

from __future__ import annotations

from dataclasses import dataclass

from tap.config import TelegramConfig
from tap.intercept.dialects import JsonObject

__all__ = ["ChatLine", "build_request", "merge_lines"]


@dataclass(frozen=True)
class ChatLine:
    """One message of the chat as the model sees it."""

    role: str  # "user" or "assistant"
    content: str


def merge_lines(lines: list[ChatLine]) -> list[ChatLine]:
    """Merge consecutive same-role lines and drop leading assistant lines."""
    merged: list[ChatLine] = []
    for line in lines:
        if not merged and line.role != "user":
            continue
        if merged and merged[-1].role == line.role:
            merged[-1] = ChatLine(line.role, f"{merged[-1].content}\n\n{line.content}")
        else:
            merged.append(line)
    return merged


def build_request(cfg: TelegramConfig, lines: list[ChatLine]) -> JsonObject:
    """The request for `[telegram] provider`; the last line must be the user's new message."""
    messages: list[JsonObject] = [{"role": line.role, "content": line.content} for line in merge_lines(lines)]
    if not messages or messages[-1]["role"] != "user":
        raise ValueError("the conversation must end with a user message")
    if cfg.provider == "anthropic":
        req: JsonObject = {"model": cfg.model, "max_tokens": cfg.max_tokens}
        if cfg.system_prompt.strip():
            req["system"] = cfg.system_prompt
        return {**req, "messages": messages}
    system = [{"role": "system", "content": cfg.system_prompt}] if cfg.system_prompt.strip() else []
    return {
        "model": cfg.model,
        "messages": [*system, *messages],
        "stream": False,
        "options": {"num_predict": cfg.max_tokens},
    }
