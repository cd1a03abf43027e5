"""Following logs inside `tap serve`: a background task that polls the configured paths.

`start_following(config, data_dir, ingest, stop)` starts it when `[logtail] enabled = true` (else
returns None): every `poll_s` seconds one `Tailer.poll()` runs in a worker thread and hands events
to `ingest` (the server's `Ingestor.ingest`; the server's extraction worker then turns them into
memories). A failing pass is logged and retried at the next poll; the task ends soon after `stop`
is set, after the pass in progress has committed its offsets.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from bridges.logtail.progress_db import OffsetStore
from bridges.logtail.tailer import Tailer
from tap.config import LogtailConfig
from tap.plural import plural
from tap.records import IngestEvent
from tap.runtime.tasks import create_task

__all__ = ["STATE_FILE", "follow", "start_following"]

log = logging.getLogger("tap.logtail")
STATE_FILE = "logtail.db"
MISSING = "no such file or directory"


async def follow(tailer: Tailer, stop: asyncio.Event, poll_s: float) -> None:
    """Poll until `stop` is set; one pass at a time, off the event loop."""
    tailer.stop_requested = stop.is_set
    while not stop.is_set():
        try:
            queued = await asyncio.to_thread(tailer.poll)
        except Exception:
            log.exception("log tail pass failed; retrying in %.1f s", poll_s)
        else:
            if queued:
                log.info("logtail: queued %s", plural(queued, "new turn"))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), poll_s)


def _report_error(path: str, reason: str) -> None:
    level = logging.INFO if reason == MISSING else logging.WARNING
    log.log(level, "logtail: %s: %s", path, reason)


def _sink(ingest: Callable[[IngestEvent], int]) -> Callable[[Sequence[IngestEvent]], int]:
    return lambda events: sum(ingest(event) for event in events)


def start_following(
    config: LogtailConfig, data_dir: Path, ingest: Callable[[IngestEvent], int], stop: asyncio.Event
) -> asyncio.Task[None] | None:
    """The background follow task for `[logtail]`, or None when it is disabled."""
    if not config.enabled or not config.paths:
        return None
    store = OffsetStore(data_dir / STATE_FILE)
    tailer = Tailer(
        config.paths,
        store,
        _sink(ingest),
        fmt=config.format,
        scope=config.scope,
        on_warning=lambda text: log.warning("logtail: %s", text),
        on_error=_report_error,
    )
    log.info("logtail: following %s (format %s, every %.1f s)", ", ".join(config.paths), config.format, config.poll_s)

    async def run() -> None:
        try:
            await follow(tailer, stop, config.poll_s)
        finally:
            store.close()

    return create_task(run(), name="logtail")
