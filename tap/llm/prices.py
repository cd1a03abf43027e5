"""Estimated dollars for one model call, for the cost ledger and the daily budget cap.

Prices are USD per million tokens from Anthropic's pricing page
(https://platform.claude.com/docs/en/about-claude/pricing, checked November 2026):

    model               input   output   cache read (hit)   cache write (5 min)
    claude-haiku-4-5     1.00     5.00               0.10                  1.25
    claude-sonnet-4-5    3.00    15.00               0.30                  3.75
    claude-sonnet-4-6    3.00    15.00               0.30                  3.75

Invariants:
- the estimate never under-states what a Claude call cost: a model id is matched by prefix (so
  dated ids like `claude-sonnet-4-5-20250929` are priced too); an unknown Sonnet or Haiku model is
  priced as Sonnet 4.5 (no Sonnet or Haiku has cost more), and any other unknown model (Opus and
  larger families) at the highest price Anthropic has listed (Opus 4/4.1: 15 / 75);
- cache writes are priced at the 5-minute rate (tap sets no 1-hour breakpoints);
- Ollama runs locally and costs 0; so does any provider other than "anthropic".
Sonnet 4.5's surcharge for prompts over 200K tokens is not modelled: tap's chunks are far smaller.
"""

from __future__ import annotations

import msgspec

from tap.llm.contract import Usage

__all__ = ["HAIKU", "PRICES", "SONNET", "TOP", "Price", "cost_usd", "price_for"]

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


def price_for(model: str) -> Price:
    """The price of an Anthropic model id (the longest known prefix; else the safe fallback)."""
    name = model.strip().lower()
    known = [prefix for prefix in PRICES if name.startswith(prefix)]
    if known:
        return PRICES[max(known, key=len)]
    return SONNET if "sonnet" in name or "haiku" in name else TOP


def cost_usd(usage: Usage) -> float:
    """Estimated dollars for the call `usage` describes (0 for local providers)."""
    if usage.provider != "anthropic":
        return 0.0
    price = price_for(usage.model)
    total = (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_tokens * price.cache_read
        + usage.cache_write_tokens * price.cache_write
    )
    return total / _PER_TOKEN
