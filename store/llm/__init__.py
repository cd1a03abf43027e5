"""The language-model adapters: the Anthropic, Ollama and OpenAI SDKs behind the core's ports.

- `LLMProvider` (tap.ports), the gate, the extractor and the reconciler of the extraction
  pipeline: `AnthropicProvider` (anthropic), `OllamaProvider` (ollama), `OpenAICompatibleProvider`
  (openai: any `/v1/chat/completions` server, with openai_answer reading its answers);
- `ReplyModel` (tap.ports), the Telegram bot's replies: `AnthropicReplies`, `OllamaReplies`
  (replies);
- one mapping of the anthropic SDK's errors and usage for both (anthropic_mapping), and the
  warnings for models the SDK lists as deprecated (deprecation).

`make_llm_provider(cfg, "gate")` and `make_llm_provider(cfg, "extract")` are the only way the
composition root picks a provider; each returns None when the configured choice needs no model
(`[extract] gate = "heuristic"`, `[extract] provider = "rules"`), so the caller falls back to the
free heuristic gate / rule-based extractor. The same `LLMProvider` object serves `extract` and
`reconcile`; a provider built for the gate is only asked to `gate`. `make_reply_model(cfg)` picks
the Telegram bot's model the same way (`[telegram] provider`).

The SDK modules are imported on first use: the `anthropic` and `openai` SDKs take seconds to
import, which the offline default (and every CLI command) should not pay.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Literal

from tap.config import ExtractConfig, TelegramConfig
from tap.intercept.reply_model import ReplyModel
from tap.llm.contract import LLMProvider

if TYPE_CHECKING:
    from store.llm.anthropic_provider import AnthropicProvider
    from store.llm.ollama_provider import OllamaProvider
    from store.llm.openai_provider import OpenAICompatibleProvider
    from store.llm.replies import AnthropicReplies, OllamaReplies

__all__ = [
    "AnthropicProvider",
    "AnthropicReplies",
    "OllamaProvider",
    "OllamaReplies",
    "OpenAICompatibleProvider",
    "make_llm_provider",
    "make_reply_model",
]


def make_llm_provider(cfg: ExtractConfig, which: Literal["gate", "extract"]) -> LLMProvider | None:
    """The provider configured for the gate or the extractor; None for "heuristic" / "rules"."""
    choice = cfg.gate if which == "gate" else cfg.provider
    if choice == "anthropic":
        from store.llm.anthropic_provider import AnthropicProvider

        return AnthropicProvider(cfg)
    if choice == "ollama":
        from store.llm.ollama_provider import OllamaProvider

        return OllamaProvider(cfg)
    if choice == "openai":
        from store.llm.openai_provider import OpenAICompatibleProvider

        return OpenAICompatibleProvider(cfg)
    return None


def make_reply_model(cfg: TelegramConfig) -> ReplyModel:
    """The client for `[telegram] provider`."""
    from store.llm.replies import AnthropicReplies, OllamaReplies

    if cfg.provider == "anthropic":
        return AnthropicReplies(cfg)
    return OllamaReplies(cfg)


_LAZY = {
    "AnthropicProvider": "store.llm.anthropic_provider",
    "OllamaProvider": "store.llm.ollama_provider",
    "OpenAICompatibleProvider": "store.llm.openai_provider",
    "AnthropicReplies": "store.llm.replies",
    "OllamaReplies": "store.llm.replies",
}


def __getattr__(name: str) -> Any:
    """The adapter classes, imported when first asked for."""
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
