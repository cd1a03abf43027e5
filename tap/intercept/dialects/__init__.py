"""The LLM API dialects tap sits in front of (pure: no I/O, no HTTP library).

One object per dialect implements `Dialect` (tap.intercept.dialects.protocol): reading the request's turns
(`transcript`, `human_turn`, `client_ids`), rewriting it (`inject`, `encode`), its error shape,
and its response tee parsers (`stream_parser`, `parse_response`).  The interception core
(tap.intercept.core) goes through these, so the proxy, the Telegram bridge and the mitmproxy addon
read and rewrite a request the same way.  `registry` maps paths and names to dialects.

Modules: `common` (JSON helpers, the `JsonDialect` base), `transcript` (the normalised view of a
request), `wire` (SSE/line decoding and the reply assembler every parser shares), one module per
dialect and one `*_stream` module per response format, and `tee` (which parser reads a response).
"""

from __future__ import annotations

from tap.intercept.dialects.anthropic import AnthropicMessages
from tap.intercept.dialects.common import JsonObject
from tap.intercept.dialects.ollama import OllamaChat, OllamaGenerate
from tap.intercept.dialects.openai import OpenAIChat
from tap.intercept.dialects.openai_responses import OpenAIResponses
from tap.intercept.dialects.protocol import Dialect
from tap.intercept.dialects.registry import (
    ANTHROPIC,
    COUNT_ROUTES,
    DIALECTS,
    MEMORY_ROUTES,
    OLLAMA_CHAT,
    OLLAMA_GENERATE,
    OPENAI,
    OPENAI_RESPONSES,
    count_dialect,
    get_dialect,
    memory_dialect,
    passthrough_dialect,
)
from tap.intercept.dialects.transcript import (
    ClientIds,
    HumanTurn,
    PlainMessage,
    find_human_turn,
    history_end,
    newest_turn_index,
)
from tap.intercept.dialects.wire import Reply, StreamParser

__all__ = [
    "ANTHROPIC",
    "COUNT_ROUTES",
    "DIALECTS",
    "MEMORY_ROUTES",
    "OLLAMA_CHAT",
    "OLLAMA_GENERATE",
    "OPENAI",
    "OPENAI_RESPONSES",
    "AnthropicMessages",
    "ClientIds",
    "Dialect",
    "HumanTurn",
    "JsonObject",
    "OllamaChat",
    "OllamaGenerate",
    "OpenAIChat",
    "OpenAIResponses",
    "Reply",
    "PlainMessage",
    "StreamParser",
    "count_dialect",
    "find_human_turn",
    "get_dialect",
    "history_end",
    "newest_turn_index",
    "memory_dialect",
    "passthrough_dialect",
]
