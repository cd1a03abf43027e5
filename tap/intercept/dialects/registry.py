"""The one registry of dialects: which dialect a request path speaks, and which names exist.

`MEMORY_ROUTES` maps each path tap recalls into and captures from to its dialect; a dialect
object carries its own request rewriting and its response parsers (`stream_parser`,
`parse_response`), so adding an API means adding a dialect module and one line here.
`COUNT_ROUTES` are the token-counting paths: they get the same memory block the matching memory
route would inject for the same request (so a client budgeting its context sees the truth) and
are never captured.  Every other path of those APIs passes through unchanged, addressed to the
dialect `passthrough_dialect` picks (which upstream to forward to and which error shape to
answer in).
"""

from __future__ import annotations

from collections.abc import Mapping

from tap.intercept.dialects.anthropic import AnthropicMessages
from tap.intercept.dialects.ollama import OllamaChat, OllamaGenerate
from tap.intercept.dialects.openai import OpenAIChat
from tap.intercept.dialects.openai_responses import OpenAIResponses
from tap.intercept.dialects.protocol import Dialect

ANTHROPIC = AnthropicMessages()
OPENAI = OpenAIChat()
OPENAI_RESPONSES = OpenAIResponses()
OLLAMA_CHAT = OllamaChat()
OLLAMA_GENERATE = OllamaGenerate()

DIALECTS: Mapping[str, Dialect] = {
    d.name: d for d in (ANTHROPIC, OPENAI, OPENAI_RESPONSES, OLLAMA_CHAT, OLLAMA_GENERATE)
}

MEMORY_ROUTES: Mapping[str, Dialect] = {
    "/v1/messages": ANTHROPIC,
    "/v1/chat/completions": OPENAI,
    "/v1/responses": OPENAI_RESPONSES,
    "/api/chat": OLLAMA_CHAT,
    "/api/generate": OLLAMA_GENERATE,
}
"""POST paths whose requests get memories and whose exchanges are captured."""

COUNT_ROUTES: Mapping[str, Dialect] = {"/v1/messages/count_tokens": ANTHROPIC}
"""POST paths that count a request's tokens: the body gets the block its memory route would get."""

PASSTHROUGH_PREFIXES = ("/v1/", "/api/")
"""Path prefixes of the APIs tap fronts; other paths under them are forwarded unchanged."""


def get_dialect(name: str) -> Dialect:
    """The dialect called `name`; `KeyError` naming the known ones otherwise."""
    try:
        return DIALECTS[name]
    except KeyError:
        raise KeyError(f"unknown dialect {name!r} (known: {', '.join(DIALECTS)})") from None


def memory_dialect(path: str) -> Dialect | None:
    """The dialect of a memory route, or None for any other path."""
    return MEMORY_ROUTES.get(path)


def count_dialect(path: str) -> Dialect | None:
    """The dialect of a token-counting route, or None for any other path."""
    return COUNT_ROUTES.get(path)


def passthrough_dialect(path: str, headers: Mapping[str, str]) -> Dialect:
    """The dialect a pass-through path belongs to.

    `/api/*` is Ollama; `/v1/*` is Anthropic when the client speaks it (`anthropic-version`, or a
    `/v1/messages…` path), else OpenAI.
    """
    if path.startswith("/api/"):
        return OLLAMA_CHAT
    if "anthropic-version" in headers or path.startswith("/v1/messages"):
        return ANTHROPIC
    return OPENAI
