"""The Telegram bot's chat model: `ReplyModel` (tap.ports) over the anthropic and ollama SDKs.

`AnthropicReplies` (anthropic SDK, `[telegram] anthropic_url`, key from `api_key_env`) and
`OllamaReplies` (ollama SDK, `[telegram] ollama_url`) answer one request in their dialect's shape
(built by bridges.telegram.model.build_request, memories injected by the core).

Invariants:
- a call returns a `ChatReply` with non-empty text, or raises `ProviderError` whose message names
  the provider URL and model (never the API key); `retryable` tells whether trying again may help;
  Anthropic errors and usage go through the one mapping of tap (store.llm.anthropic_mapping);
- a missing Anthropic key is a `ConfigError` when the client is built (at `tap serve` start), not
  a failure of every chat message later.
"""

from __future__ import annotations

from typing import Any

import anthropic
import httpx
import ollama

from store.llm.anthropic_mapping import call_error, usage_of
from tap.config import TelegramConfig, read_secret
from tap.errors import ConfigError, ProviderError
from tap.intercept.dialects import ANTHROPIC, OLLAMA_CHAT, Dialect, JsonObject
from tap.llm.contract import ChatReply, Usage

__all__ = ["AnthropicReplies", "OllamaReplies"]


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

    async def complete(self, request: JsonObject) -> ChatReply:
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
        return ChatReply(text=text, usage=usage_of(response, str(request.get("model", ""))))

    async def close(self) -> None:
        """Close the SDK's connection pool."""
        await self._client.close()


class OllamaReplies:
    """Replies from a local model through the ollama SDK."""

    dialect: Dialect = OLLAMA_CHAT

    def __init__(self, cfg: TelegramConfig) -> None:
        self._where = f"Ollama at {cfg.ollama_url} (model {cfg.model})"
        self._client = ollama.AsyncClient(host=cfg.ollama_url, timeout=cfg.reply_timeout_s)

    async def complete(self, request: JsonObject) -> ChatReply:
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
        return ChatReply(text=text, usage=usage)

    async def close(self) -> None:
        """Close the SDK's connection pool."""
        await self._client.close()  # type: ignore[no-untyped-call]
