"""What the core asks of a language model, without any model SDK (docs/architecture.md, Layers).

The extraction pipeline asks a model three things about a chunk (gate, extract, reconcile) through
the `tap.llm.contract.LLMProvider` port; the Telegram bot asks for a chat reply through
`tap.intercept.reply_model.ReplyModel`. This package holds what every adapter of those ports shares and what the
core needs to use their answers: the value types and the error (base), the prompts (prompts), the
JSON schemas and their strict validation (schema), and the price table (prices).

The adapters that talk to the Anthropic and Ollama SDKs live at the edge, in store/llm/, and the
composition roots pick them (`store.llm.make_llm_provider`, `store.llm.make_reply_model`).

Exceptions: every adapter failure is a `ProviderCallError` (a `tap.errors.ProviderError`) with
`retryable`, `retry_after` and `usage`; see tap.llm.contract.
"""

from __future__ import annotations

from tap.llm.contract import ChatReply, Decision, GateVerdict, ProviderCallError, Usage
from tap.llm.prices import cost_usd

__all__ = [
    "ChatReply",
    "Decision",
    "GateVerdict",
    "ProviderCallError",
    "Usage",
    "cost_usd",
]
