"""Human-readable terminal output for the CLI (rich tables); JSON output lives in tap.views.

rich is imported by the functions that build tables, not at the top: every `tap` command imports
this module, and most print no table.
"""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from tap.ports import StoreStats
from tap.records import Memory
from tap.validate import timestamp_ok

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table


def console() -> Console:
    """A console on stdout; plain text when stdout is not a terminal, then as wide as $COLUMNS or
    160 (a pipe or a file has no width, and 80 left no room for the content column)."""
    from rich.console import Console

    width = None if sys.stdout.isatty() else int(os.environ.get("COLUMNS", "0") or 0) or 160
    return Console(highlight=False, soft_wrap=False, width=width)


def when(stamp: float) -> str:
    """A timestamp as 'YYYY-MM-DD HH:MM' UTC, or '-' when unset."""
    if not stamp or not timestamp_ok(stamp):
        return "-"
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%d %H:%M")


def memories_table(memories: list[Memory], *, scores: list[float] | None = None, title: str = "") -> Table:
    """id, scope, kind, importance, date, content (and score when given; and, when superseded
    versions are listed, which version is current)."""
    from rich.table import Table

    table = Table(title=title or None, show_lines=False, expand=False)
    table.add_column("id", no_wrap=True)
    history = any(not m.current for m in memories)
    if history:
        table.add_column("version", no_wrap=True)
    if scores is not None:
        table.add_column("score", justify="right")
    table.add_column("scope", max_width=28, overflow="fold")  # a long path must not squeeze the content out
    table.add_column("kind", overflow="fold")
    for name in ("imp", "date"):
        table.add_column(name, no_wrap=True)
    table.add_column("content", overflow="fold")
    for index, m in enumerate(memories):
        row = [m.id]
        if history:
            row.append("current" if m.current else f"old → {m.superseded_by}")
        if scores is not None:
            row.append(f"{scores[index]:.4f}")
        row += [m.scope, m.kind, str(m.importance), when(m.valid_from or m.created_at)[:10], m.content]
        table.add_row(*row, style=None if m.active else "dim")
    return table


def chain_text(chain: list[Memory]) -> str:
    """Every version of a memory, oldest first, one block per version."""
    blocks = []
    for m in chain:
        status = "active" if m.active else f"superseded by {m.superseded_by}"
        sources = (m.conversation + ": " if m.conversation else "") + ", ".join(m.sources)
        blocks.append(
            "\n".join(
                [
                    f"{m.id}  [{status}]",
                    f"  {m.kind} · importance {m.importance} · scope {m.scope} · source {m.source}"
                    f" · updated {when(m.updated_at)} · valid from {when(m.valid_from)}",
                    f"  tags: {', '.join(m.tags) or '-'} · sources: {sources or '-'} · recalled {m.access_count}x",
                    f"  {m.content}",
                ]
            )
        )
    return "\n\n".join(blocks)


def stats_table(stats: StoreStats) -> Table:
    """Counts by scope and kind plus size and location."""
    from rich.table import Table

    table = Table(title=f"{stats.location} · embedder {stats.embedder}")
    table.add_column("what")
    table.add_column("count", justify="right")
    table.add_row("memories (active)", str(stats.active))
    table.add_row("versions (all)", str(stats.total))
    for scope, n in stats.by_scope.items():
        table.add_row(f"scope {scope}", str(n))
    for kind, n in stats.by_kind.items():
        table.add_row(f"kind {kind}", str(n))
    table.add_row("size on disk", f"{stats.size_bytes / 1e6:.1f} MB")
    return table


def config_toml(effective: dict[str, Any]) -> str:
    """The effective config rendered as TOML tables."""
    lines: list[str] = []
    for table, values in effective.items():
        lines.append(f"[{table}]")
        for key, value in values.items():
            lines.append(f"{key} = {_toml_value(value)}")
        lines.append("")
    return "\n".join(lines)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return str(value)
