"""The tags that frame tap's memory block, and taking such a block back out of a text.

tap.recall.engine renders every block between `OPEN` and `CLOSE`. What tap captures or stores
never keeps one: a request that already carries a block (a replayed request, a client that echoes
what it sent, a log of a proxied exchange) would otherwise turn tap's own notes into conversation
text, and then into memories that quote memories. `remove_blocks` is applied by tap.scrub (so to
everything stored: the turn log, ingested turns from every way in, memories) and to the human turn
recall runs on (tap.intercept.dialects.transcript).

Invariants: pure and idempotent; a text without `OPEN` comes back unchanged (the same object); an
unclosed block (a text cut short) is removed to the end of the text; the whitespace that separated a
block from what came before it goes with it.
"""

from __future__ import annotations

import re

__all__ = ["CLOSE", "OPEN", "remove_blocks"]

OPEN = "<recalled-memories>"
CLOSE = "</recalled-memories>"

_BLOCK = re.compile(rf"\s*{re.escape(OPEN)}.*?(?:{re.escape(CLOSE)}|\Z)", re.DOTALL)
_STRAY_CLOSE = re.compile(rf"\s*{re.escape(CLOSE)}")


def remove_blocks(text: str) -> str:
    """`text` without any memory block of tap's (see the module docstring)."""
    if OPEN not in text:
        return text
    return _STRAY_CLOSE.sub("", _BLOCK.sub("", text))
