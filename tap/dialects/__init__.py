"""Request dialects of the LLM APIs tap sits in front of (pure: no I/O, no aiohttp).

One object per dialect implements `Dialect`: `parse_request`, `latest_user_text`,
`first_user_text`, `inject`, `encode`, `error_body`, `model_of`, `is_streaming`.  The proxy,
the Telegram bridge and the mitmproxy addon all go through these, so a request is read and
rewritten the same way whichever way it came in.  Cache-safety rules live in each module's
docstring (PROTOCOLS.md (a)-(c)).

Dialect names: "anthropic", "openai", "ollama_chat", "ollama_generate" (also the names
`tap.streams.stream_parser` and `tap.streams.parse_response` accept).
"""

from __future__ import annotations

from tap.dialects.anthropic import AnthropicMessages
from tap.dialects.common import Dialect, JsonObject
from tap.dialects.ollama import OllamaChat, OllamaGenerate
from tap.dialects.openai import OpenAIChat

ANTHROPIC = AnthropicMessages()
OPENAI = OpenAIChat()
OLLAMA_CHAT = OllamaChat()
OLLAMA_GENERATE = OllamaGenerate()

DIALECTS: dict[str, Dialect] = {d.name: d for d in (ANTHROPIC, OPENAI, OLLAMA_CHAT, OLLAMA_GENERATE)}


def get_dialect(name: str) -> Dialect:
    """The dialect called `name`; `KeyError` naming the known ones otherwise."""
    try:
        return DIALECTS[name]
    except KeyError:
        raise KeyError(f"unknown dialect {name!r} (known: {', '.join(DIALECTS)})") from None


__all__ = [
    "ANTHROPIC",
    "DIALECTS",
    "OLLAMA_CHAT",
    "OLLAMA_GENERATE",
    "OPENAI",
    "AnthropicMessages",
    "Dialect",
    "JsonObject",
    "OllamaChat",
    "OllamaGenerate",
    "OpenAIChat",
    "get_dialect",
]
