"""The model that writes the bot's replies: a dialect-shaped request and two SDK clients.

`build_request` turns the chat history into a request in the provider's own dialect (Anthropic
Messages, or Ollama `/api/chat`), so the recalled memory block is injected by `tap.dialects`
exactly as the proxy injects it: one block appended to the last user message, with the system
prompt and earlier turns untouched (prompt caches stay valid from turn to turn).

Clients: `AnthropicReplies` (anthropic SDK, `[telegram] anthropic_url`, key from `api_key_env`)
and `OllamaReplies` (ollama SDK, `[telegram] ollama_url`); both speak `ReplyModel`.

Invariants:
- a call returns a `Reply` with non-empty text, or raises `ProviderError` whose message names the
  provider URL and model (never the API key); `retryable` tells whether trying again may help;
- consecutive turns of the same role are merged (a pending turn followed by a new message is one
  user turn), and the first message is always a user message;
- a missing Anthropic key is a `ConfigError` when the client is built (at `tap serve` start), not
  a failure of every chat message later.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import anthropic
import httpx
import ollama

from tap.config import TelegramConfig, read_secret
from tap.dialects import ANTHROPIC, OLLAMA_CHAT, Dialect, JsonObject
from tap.errors import ConfigError, ProviderError
from tap.providers.anthropic_mapping import call_error, usage_of
from tap.providers.base import Usage


@dataclass(frozen=True)
class Line:
    """One message of the chat as the model sees it."""

    role: str  # "user" or "assistant"
    content: str


@dataclass(frozen=True)
class Reply:
    """The model's answer and what it cost."""

    text: str
    usage: Usage


class ReplyModel(Protocol):
    """A chat model behind the bot."""

    dialect: Dialect

    async def complete(self, request: JsonObject) -> Reply:
        """Answer one request built by `build_request` (possibly with memories injected)."""
        ...

    async def close(self) -> None:
        """Release the HTTP connections."""
        ...


def merge_lines(lines: list[Line]) -> list[Line]:
    """Merge consecutive same-role lines and drop leading assistant lines."""
    merged: list[Line] = []
    for line in lines:
        if not merged and line.role != "user":
            continue
        if merged and merged[-1].role == line.role:
            merged[-1] = Line(line.role, f"{merged[-1].content}\n\n{line.content}")
        else:
            merged.append(line)
    return merged


def build_request(cfg: TelegramConfig, lines: list[Line]) -> JsonObject:
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


class AnthropicReplies:
    """Replies from Claude through the anthropic SDK."""

    dialect: Dialect = ANTHROPIC

    def __init__(self, cfg: TelegramConfig) -> None:
        key = read_secret(cfg.api_key_env)
        if key is None:
            raise ConfigError(
                f"telegram.api_key_env: environment variable {cfg.api_key_env} is not set "
                '(the bot\'s replies come from Anthropic: [telegram] provider = "anthropic")'
            )
        self._where = f"Anthropic API at {cfg.anthropic_url} (model {cfg.model})"
        self._timeout_s, self._key_env = cfg.reply_timeout_s, cfg.api_key_env
        self._redact = lambda text: text.replace(key, "[redacted]")  # should a server ever echo the key
        self._client = anthropic.AsyncAnthropic(
            api_key=key, base_url=cfg.anthropic_url, timeout=cfg.reply_timeout_s, max_retries=1
        )

    async def complete(self, request: JsonObject) -> Reply:
        """One non-streamed Messages call."""
        try:
            response = await self._client.messages.create(**request)
        except anthropic.APIError as exc:  # one mapping for every Anthropic call of tap
            raise call_error(
                exc, self._where, timeout_s=self._timeout_s, key_env=self._key_env, redact=self._redact
            ) from exc
        text = "".join(block.text for block in response.content if block.type == "text").strip()
        if not text:
            raise ProviderError(f"{self._where} answered without text (stop reason {response.stop_reason})")
        return Reply(text=text, usage=usage_of(response, str(request.get("model", ""))))

    async def close(self) -> None:
        """Close the SDK's connection pool."""
        await self._client.close()


class OllamaReplies:
    """Replies from a local model through the ollama SDK."""

    dialect: Dialect = OLLAMA_CHAT

    def __init__(self, cfg: TelegramConfig) -> None:
        self._where = f"Ollama at {cfg.ollama_url} (model {cfg.model})"
        self._client = ollama.AsyncClient(host=cfg.ollama_url, timeout=cfg.reply_timeout_s)

    async def complete(self, request: JsonObject) -> Reply:
        """One non-streamed /api/chat call."""
        args: dict[str, Any] = {k: v for k, v in request.items() if k in ("model", "messages", "options")}
        try:
            response = await self._client.chat(**args, stream=False)
        except ollama.ResponseError as exc:
            retryable = exc.status_code in (408, 429) or exc.status_code >= 500
            raise ProviderError(
                f"{self._where} answered HTTP {exc.status_code}: {exc.error}", retryable=retryable
            ) from exc
        except (ConnectionError, httpx.HTTPError) as exc:
            raise ProviderError(f"{self._where} is not reachable: {type(exc).__name__}", retryable=True) from exc
        text = (response.message.content or "").strip()
        if not text:
            raise ProviderError(f"{self._where} answered without text")
        usage = Usage(
            provider="ollama",
            model=response.model or str(args.get("model", "")),
            input_tokens=response.prompt_eval_count or 0,
            output_tokens=response.eval_count or 0,
        )
        return Reply(text=text, usage=usage)

    async def close(self) -> None:
        """Close the SDK's connection pool."""
        await self._client.close()  # type: ignore[no-untyped-call]


def make_reply_model(cfg: TelegramConfig) -> ReplyModel:
    """The client for `[telegram] provider`."""
    if cfg.provider == "anthropic":
        return AnthropicReplies(cfg)
    return OllamaReplies(cfg)
