"""Estimated dollars for one model call, for the cost ledger and the daily budget cap.

Anthropic's prices are USD per million tokens from Anthropic's pricing page
(https://platform.claude.com/docs/en/about-claude/pricing, checked November 2026):

    model               input   output   cache read (hit)   cache write (5 min)
    claude-haiku-4-5     1.00     5.00               0.10                  1.25
    claude-sonnet-4-5    3.00    15.00               0.30                  3.75
    claude-sonnet-4-6    3.00    15.00               0.30                  3.75

OpenAI's (provider "openai": the OpenAI API itself, store.llm.openai_provider), USD per million
tokens as OpenAI's pricing page listed them in 2026 (https://platform.openai.com/docs/pricing):

    model          input   output        model          input   output
    gpt-4o-mini     0.15     0.60        gpt-4.1-nano    0.10     0.40
    gpt-4o          2.50    10.00        gpt-5-nano      0.05     0.40
    gpt-4.1-mini    0.40     1.60        gpt-5-mini      0.25     2.00
    gpt-4.1         2.00     8.00        gpt-5           1.25    10.00
                                          gpt-5-pro      15.00   120.00

Invariants:
- the estimate never under-states what a call to a listed family cost: a model id is matched by
  its longest known prefix (so dated ids like `claude-sonnet-4-5-20250929` or
  `gpt-4o-mini-2024-07-18` are priced too); an unknown Sonnet or Haiku model is priced as Sonnet
  4.5 (no Sonnet or Haiku has cost more), and any other unknown Claude model (Opus and larger
  families) at the highest price Anthropic has listed (Opus 4/4.1: 15 / 75); an unknown OpenAI
  mini or nano model at the dearest listed mini (0.40 / 2.00), any other at the top (15 / 120);
  OpenAI's cached input is priced as uncached input;
- cache writes are priced at the 5-minute rate (tap sets no 1-hour breakpoints);
- a model served anywhere else costs 0: Ollama, and any other OpenAI-compatible server (provider
  "openai-compatible": llama.cpp, vLLM, LM Studio, Ollama's /v1, a hosted endpoint tap has no price
  for). The ledger still counts its tokens, but the daily budget cap does not limit it.
Sonnet 4.5's surcharge for prompts over 200K tokens is not modelled: tap's chunks are far smaller.
"""

from __future__ import annotations

import msgspec

from tap.llm.contract import Usage

__all__ = ["HAIKU", "OPENAI_PRICES", "PRICES", "SONNET", "TOP", "Price", "cost_usd", "openai_price_for", "price_for"]

_PER_TOKEN = 1_000_000


class Price(msgspec.Struct, frozen=True, kw_only=True):
    """USD per million tokens of each kind."""

    input: float
    output: float
    cache_read: float
    cache_write: float


SONNET = Price(input=3.00, output=15.00, cache_read=0.30, cache_write=3.75)
HAIKU = Price(input=1.00, output=5.00, cache_read=0.10, cache_write=1.25)
TOP = Price(input=15.00, output=75.00, cache_read=1.50, cache_write=18.75)

PRICES: dict[str, Price] = {
    "claude-haiku-4-5": HAIKU,
    "claude-sonnet-4-5": SONNET,
    "claude-sonnet-4-6": SONNET,
}


def _openai(input: float, output: float) -> Price:
    return Price(input=input, output=output, cache_read=input, cache_write=input)


OPENAI_PRICES: dict[str, Price] = {
    "gpt-4o-mini": _openai(0.15, 0.60),
    "gpt-4o": _openai(2.50, 10.00),
    "gpt-4.1-nano": _openai(0.10, 0.40),
    "gpt-4.1-mini": _openai(0.40, 1.60),
    "gpt-4.1": _openai(2.00, 8.00),
    "gpt-5-nano": _openai(0.05, 0.40),
    "gpt-5-mini": _openai(0.25, 2.00),
    "gpt-5-pro": _openai(15.00, 120.00),
    "gpt-5": _openai(1.25, 10.00),
}
OPENAI_MINI = _openai(0.40, 2.00)
OPENAI_TOP = _openai(15.00, 120.00)


def _by_prefix(table: dict[str, Price], model: str) -> Price | None:
    """The price of the longest prefix of `model` the table knows (case-insensitive), else None."""
    name = model.strip().lower()
    known = [prefix for prefix in table if name.startswith(prefix)]
    return table[max(known, key=len)] if known else None


def openai_price_for(model: str) -> Price:
    """The price of an OpenAI model id (the longest known prefix; else the safe fallback)."""
    fallback = OPENAI_MINI if "mini" in model.lower() or "nano" in model.lower() else OPENAI_TOP
    return _by_prefix(OPENAI_PRICES, model) or fallback


def price_for(model: str) -> Price:
    """The price of an Anthropic model id (the longest known prefix; else the safe fallback)."""
    fallback = SONNET if "sonnet" in model.lower() or "haiku" in model.lower() else TOP
    return _by_prefix(PRICES, model) or fallback


def cost_usd(usage: Usage) -> float:
    """Estimated dollars for the call `usage` describes (0 for local and unpriced servers)."""
    if usage.provider == "anthropic":
        price = price_for(usage.model)
    elif usage.provider == "openai":
        price = openai_price_for(usage.model)
    else:
        return 0.0
    total = (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_tokens * price.cache_read
        + usage.cache_write_tokens * price.cache_write
    )
    return total / _PER_TOKEN
