"""Counts in words that agree with their number ("1 memory", "2 memories"), for the CLI's output
and the log lines alike: no "memory(s)", no "1 memories"."""

from __future__ import annotations


def plural(n: int, one: str, many: str | None = None) -> str:
    """`plural(1, "turn")` is "1 turn", `plural(2, "memory", "memories")` "2 memories"; `many`
    defaults to `one` + "s", and the count has thousands separators ("1,200 turns")."""
    return f"{n:,} {one if n == 1 else many if many is not None else one + 's'}"
