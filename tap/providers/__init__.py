"""LLM providers of the extraction pipeline: the gate, the extractor and the reconciler.

`make_llm_provider(cfg, "gate")` and `make_llm_provider(cfg, "extract")` are the only way the
composition root picks a provider; each returns None when the configured choice needs no model
(`[extract] gate = "heuristic"`, `[extract] provider = "rules"`), so the caller falls back to the
free heuristic gate / rule-based extractor. The same `LLMProvider` object serves `extract` and
`reconcile`; a provider built for the gate is only asked to `gate`.

Exceptions: every provider failure is a `ProviderCallError` (a `tap.errors.ProviderError`) with
`retryable`, `retry_after` and `usage`; see tap.providers.base.

The provider modules are imported on first use: the `anthropic` SDK alone takes 1-3 s to import,
which the offline default (and every CLI command) should not pay.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Literal

from tap.config import ExtractConfig
from tap.providers.base import Decision, GateVerdict, LLMProvider, ProviderCallError, Usage
from tap.providers.prices import cost_usd

if TYPE_CHECKING:
    from tap.providers.anthropic import AnthropicProvider
    from tap.providers.ollama import OllamaProvider

__all__ = [
    "AnthropicProvider",
    "Decision",
    "GateVerdict",
    "LLMProvider",
    "OllamaProvider",
    "ProviderCallError",
    "Usage",
    "cost_usd",
    "make_llm_provider",
]


def make_llm_provider(cfg: ExtractConfig, which: Literal["gate", "extract"]) -> LLMProvider | None:
    """The provider configured for the gate or the extractor; None for "heuristic" / "rules"."""
    choice = cfg.gate if which == "gate" else cfg.provider
    if choice == "anthropic":
        from tap.providers.anthropic import AnthropicProvider

        return AnthropicProvider(cfg)
    if choice == "ollama":
        from tap.providers.ollama import OllamaProvider

        return OllamaProvider(cfg)
    return None


_LAZY = {"AnthropicProvider": "tap.providers.anthropic", "OllamaProvider": "tap.providers.ollama"}


def __getattr__(name: str) -> Any:
    """The provider classes, imported when first asked for."""
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
