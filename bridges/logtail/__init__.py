"""Log-tail ingestion: chat transcripts on disk (Claude Code sessions, JSONL, plain text) → memories.

`Tailer` reads files incrementally (offsets in `<data dir>/logtail.db`, exactly once) and hands
`IngestEvent`s to a sink, the one ingestion entry point; `follow` keeps doing that in `tap serve`.
Parsers: bridges.logtail.claude_code, .jsonl, .text; detection in .detect.
"""

from bridges.logtail.follow import follow, start_following
from bridges.logtail.formats import FORMATS
from bridges.logtail.state import OffsetStore
from bridges.logtail.tailer import Choice, Sink, Skipped, Tailer, TailStats

__all__ = ["FORMATS", "Choice", "OffsetStore", "Sink", "Skipped", "TailStats", "Tailer", "follow", "start_following"]
