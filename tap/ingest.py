"""The one ingestion entry point: every source hands an `IngestEvent` to `Ingestor.ingest`.

Proxy capture, `POST /tap/ingest`, log-tail, Telegram, the mitmproxy addon and agent hooks all end
here. Messages become scrubbed turns (system and tool messages dropped, `<private>` spans and
secrets removed, tap.chunker.prepare_turns) and go into the durable queue's conversation windows;
the return value is the number of *new* turns (a re-delivered turn counts 0).
"""

from __future__ import annotations

import asyncio

import msgspec

from tap.chunker import prepare_turns
from tap.jsonbody import decode
from tap.queue import ChunkQueue
from tap.records import IngestEvent
from tap.validate import MAX_ID, MAX_TIMESTAMP, text_problem, timestamp_ok

MAX_SCOPE = 256
MAX_MESSAGES = 10_000


def parse_event(body: bytes) -> IngestEvent:
    """Decode and validate an ingest request body; ValueError says what is wrong."""
    event = decode(body, IngestEvent)
    if not event.scope.strip() or len(event.scope) > MAX_SCOPE:
        raise ValueError(f"scope must be 1-{MAX_SCOPE} characters")
    problem = text_problem("conversation", event.conversation, MAX_ID)
    if problem:
        raise ValueError(problem)
    if len(event.messages) > MAX_MESSAGES:
        raise ValueError(f"at most {MAX_MESSAGES} messages per request")
    for index, message in enumerate(event.messages):
        if not timestamp_ok(message.timestamp):
            raise ValueError(
                f"messages[{index}].timestamp must be a POSIX time in seconds from 0 (unknown) to {MAX_TIMESTAMP:.0f}"
            )
        if len(message.id) > MAX_ID:
            raise ValueError(f"messages[{index}].id must be at most {MAX_ID} characters")
    return event


class Ingestor:
    """Turns events into queued turns and chunks."""

    def __init__(self, queue: ChunkQueue) -> None:
        self.queue = queue
        self.turns_ingested = 0

    def ingest(self, event: IngestEvent) -> int:
        """Queue the event's new turns; returns how many were new. A timestamp out of range (a log
        line's) becomes unknown (0), so nothing stored breaks a later read."""
        messages = [
            m if timestamp_ok(m.timestamp) else msgspec.structs.replace(m, timestamp=0.0) for m in event.messages
        ]
        turns = prepare_turns(messages, conversation=event.conversation)
        if not turns:
            return 0
        added = self.queue.add_turns(event.scope, event.conversation, event.source, turns)
        self.turns_ingested += added
        return added

    async def ingest_async(self, event: IngestEvent) -> int:
        """ingest() off the event loop."""
        return await asyncio.to_thread(self.ingest, event)
