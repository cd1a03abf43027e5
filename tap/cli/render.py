"""Human-readable terminal output for the CLI; JSON output lives in tap.memories.views.

The memory listings are plain text (the commands that must answer at once); `stats_table` uses
rich, imported by the function itself, not at the top: every `tap` command imports this module.
"""

from __future__ import annotations

import os
import shutil
import sys
import textwrap
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import tomli_w

from tap.ports import StoreStats
from tap.records import Memory, SourceTurn
from tap.validate import timestamp_ok

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table


def console() -> Console:
    """A console on stdout; plain text when stdout is not a terminal, then as wide as $COLUMNS or
    160 (a pipe or a file has no width, and 80 left no room for the content column)."""
    from rich.console import Console

    return Console(highlight=False, soft_wrap=False, width=None if sys.stdout.isatty() else _pipe_width())


def _pipe_width() -> int:
    return int(os.environ.get("COLUMNS", "0") or 0) or 160


def _width() -> int:
    """The terminal's width on a terminal; $COLUMNS or 160 in a pipe or a file."""
    return shutil.get_terminal_size((_pipe_width(), 24)).columns if sys.stdout.isatty() else _pipe_width()


def when(stamp: float) -> str:
    """A timestamp as 'YYYY-MM-DD HH:MM' UTC, or '-' when unset."""
    if not stamp or not timestamp_ok(stamp):
        return "-"
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%d %H:%M")


def status_of(memory: Memory) -> str:
    """Which version a memory is and what state it is in: 'current', 'old → m_…', 'archived',
    'conflict ↔ m_…' (combined with ', ')."""
    if not memory.current:
        return f"old → {memory.superseded_by}"
    parts = ["archived" if memory.archived else "current"]
    if memory.conflicts_with:
        parts.append("conflict ↔ " + " ".join(memory.conflicts_with))
    return ", ".join(parts)


SCOPE_WIDTH = 28  # a long scope (a project path) must not squeeze the content out
MIN_CONTENT = 24


def memories_table(
    memories: list[Memory], *, scores: list[float] | None = None, title: str = "", versions: bool = False
) -> str:
    """id, scope, kind, importance, date, content (and score when given; and a status column —
    which version is current, archived, in conflict — when `versions` lists every version or when
    any memory listed is not a plain current one) as a plain-text table that fits the terminal.

    Plain text rather than rich: importing rich's console would be a large share of what `tap
    memories list` takes against a running server. Old versions are dimmed on a terminal.
    """
    history = versions or any(not m.active or m.conflicts_with for m in memories)
    headers = ["id", *(["version"] if history else []), *(["score"] if scores is not None else [])]
    headers += ["scope", "kind", "imp", "date", "content"]
    rows = []
    for index, m in enumerate(memories):
        row = [m.id]
        if history:
            row.append(status_of(m))
        if scores is not None:
            row.append(f"{scores[index]:.4f}")
        day = when(m.valid_from or m.created_at)[:10]
        row += [m.scope, m.kind, str(m.importance), day, " ".join(m.content.split())]
        rows.append(row)
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    scope_col = headers.index("scope")
    widths[scope_col] = min(widths[scope_col], SCOPE_WIDTH)
    fixed = sum(widths[:-1]) + 2 * (len(widths) - 1)
    widths[-1] = max(MIN_CONTENT, min(widths[-1], _width() - fixed))
    lines = [*([title] if title else []), _line(headers, widths), _line(["─" * w for w in widths], widths)]
    dim = sys.stdout.isatty()
    for m, row in zip(memories, rows, strict=True):
        cells = [_cut(cell, widths[i], wrap=i == len(row) - 1) for i, cell in enumerate(row)]
        cells[scope_col] = _cut(row[scope_col], widths[scope_col], wrap=False)
        for depth in range(max(len(c) for c in cells)):
            text = _line([c[depth] if depth < len(c) else "" for c in cells], widths)
            lines.append(f"\x1b[2m{text}\x1b[0m" if dim and not m.active else text)
    return "\n".join(lines)


def _cut(text: str, width: int, *, wrap: bool) -> list[str]:
    """The cell's lines: words wrapped to the width (the content), or the text folded at it."""
    if len(text) <= width:
        return [text]
    if wrap:
        return textwrap.wrap(text, width, break_long_words=True, break_on_hyphens=False) or [""]
    return [text[i : i + width] for i in range(0, len(text), width)]


def _line(cells: list[str], widths: list[int]) -> str:
    return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()


TURN_CHARS = 300


def chain_text(chain: list[Memory], turns: Mapping[str, Sequence[SourceTurn]] | None = None) -> str:
    """Every version of a memory, oldest first, one block per version, each with the source turns
    still kept (when `turns` is given)."""
    blocks = []
    for m in chain:
        status = status_of(m).replace("old → ", "superseded by ")
        sources = (m.conversation + ": " if m.conversation else "") + ", ".join(m.sources)
        lines = [
            f"{m.id}  [{status}]",
            f"  {m.kind} · importance {m.importance} · scope {m.scope} · source {m.source}"
            f" · updated {when(m.updated_at)} · valid from {when(m.valid_from)}",
            f"  tags: {', '.join(m.tags) or '-'} · sources: {sources or '-'} · recalled {m.access_count}x",
        ]
        if m.merged_from:
            lines.append(f"  merged from: {', '.join(m.merged_from)}")
        if m.archived:
            lines.append(f"  archived {when(m.archived_at)} (`tap memories restore {m.id}` brings it back)")
        lines.append(f"  {m.content}")
        if turns is not None:
            kept = turns.get(m.id, [])
            for turn in kept:
                text = " ".join(turn.text.split())
                text = text if len(text) <= TURN_CHARS else text[: TURN_CHARS - 1] + "…"
                lines.append(f"    ← {turn.id} ({turn.role}, {when(turn.at)}): {text}")
            if m.sources and not kept:
                lines.append("    ← (its source turns are no longer kept: [data] retention_days)")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def stats_table(stats: StoreStats) -> Table:
    """Counts by scope and kind plus size and location."""
    from rich.table import Table

    table = Table(title=f"{stats.location} · embedder {stats.embedder}")
    table.add_column("what")
    table.add_column("count", justify="right")
    table.add_row("memories (active)", str(stats.active))
    table.add_row("archived (listed, not recalled)", str(stats.archived))
    table.add_row("versions (all)", str(stats.total))
    for scope, n in stats.by_scope.items():
        table.add_row(f"scope {scope}", str(n))
    for kind, n in stats.by_kind.items():
        table.add_row(f"kind {kind}", str(n))
    table.add_row("size on disk", f"{stats.size_bytes / 1e6:.1f} MB")
    return table


def config_toml(effective: dict[str, Any]) -> str:
    """The effective config rendered as TOML tables (tomli-w: quoting and escaping done right)."""
    return tomli_w.dumps(effective)
