"""Shared pieces for the log-tail tests: a real ingestion queue as the sink, and a tailer on it."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bridges.logtail import OffsetStore, Tailer
from tap.ingest.entry import Ingestor
from tap.ingest.queue import ChunkQueue
from tap.records import IngestEvent


class Recorder:
    """The sink: every event goes through the real Ingestor into a real ChunkQueue, and is recorded."""

    def __init__(self, data_dir: Path) -> None:
        self.queue = ChunkQueue(data_dir / "queue.db")
        self.ingestor = Ingestor(self.queue)
        self.events: list[IngestEvent] = []
        self.warnings: list[str] = []
        self.errors: list[tuple[str, str]] = []

    def __call__(self, events: Sequence[IngestEvent]) -> int:
        self.events.extend(events)
        return sum(self.ingestor.ingest(event) for event in events)

    def messages(self) -> list[tuple[str, str, str, str, str]]:
        """(scope, conversation, id, role, content) of everything handed over, in order."""
        return [(e.scope, e.conversation, m.id, m.role, m.content) for e in self.events for m in e.messages]

    def seen(self) -> list[tuple[str, str, str]]:
        """The (scope, conversation, turn id) rows the queue knows (what exactly-once is about)."""
        with sqlite3.connect(self.queue.path) as db:
            return sorted(db.execute("SELECT scope, conversation, turn_id FROM seen").fetchall())

    def tailer(self, roots: Sequence[str | Path], data_dir: Path, **options: Any) -> Tailer:
        """A tailer over roots, with its offsets in data_dir/logtail.db, feeding this recorder."""
        return Tailer(
            [str(r) for r in roots],
            OffsetStore(data_dir / "logtail.db"),
            self,
            on_warning=self.warnings.append,
            on_error=lambda path, reason: self.errors.append((path, reason)),
            **options,
        )

    def close(self) -> None:
        self.queue.close()
