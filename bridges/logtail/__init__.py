"""Log-tail ingestion: chat transcripts on disk (Claude Code sessions, JSONL, plain text) → memories.

`Tailer` reads files incrementally (offsets in `<data dir>/logtail.db`, exactly once) and hands
`IngestEvent`s to a sink, the one ingestion entry point; `follow` keeps doing that in `tap serve`.
Parsers: bridges.logtail.claude_code, .jsonl, .text; detection in .detect.

The names below are loaded on first use (PEP 562), so importing a light submodule such as
bridges.logtail.formats (the CLI's `--format` choices) does not pay for asyncio and the parsers:
every `tap` command imports the CLI's option lists at start-up.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bridges.logtail.follow import follow, start_following
    from bridges.logtail.formats import FORMATS
    from bridges.logtail.progress_db import OffsetStore
    from bridges.logtail.tailer import Choice, Sink, Skipped, Tailer, TailStats

_HOME = {
    "follow": "follow",
    "start_following": "follow",
    "FORMATS": "formats",
    "OffsetStore": "progress_db",
    "Choice": "tailer",
    "Sink": "tailer",
    "Skipped": "tailer",
    "Tailer": "tailer",
    "TailStats": "tailer",
}

__all__ = ["FORMATS", "Choice", "OffsetStore", "Sink", "Skipped", "TailStats", "Tailer", "follow", "start_following"]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"bridges.logtail.{home}"), name)
