"""The one ingestion entry point: every source hands an `IngestEvent` to `Ingestor.ingest`.

Proxy capture, `POST /tap/ingest`, log-tail, Telegram, the mitmproxy addon and agent hooks all end
here. Messages become scrubbed turns (system and tool messages dropped, `<private>` spans and
secrets removed, tap.ingest.chunker.prepare_turns) and go into the durable queue's conversation windows;
the return value is the number of *new* turns (a re-delivered turn counts 0).
"""

from __future__ import annotations

import asyncio

import msgspec

from tap.ingest.chunker import HARD_CAP_FACTOR, prepare_turns
from tap.ingest.queue import ChunkQueue
from tap.jsonbody import decode
from tap.records import IngestEvent, Message, Source
from tap.validate import MAX_ID, parse_timestamp, text_problem, timestamp_ok

MAX_SCOPE = 256
MAX_MESSAGES = 10_000


class _WireMessage(msgspec.Struct, kw_only=True):
    """A message as `POST /tap/ingest` takes it: the timestamp as a number or an ISO-8601 string."""

    role: str
    content: str
    name: str = ""
    id: str = ""
    timestamp: float | str = 0.0


class _WireEvent(msgspec.Struct, kw_only=True):
    scope: str
    conversation: str
    source: Source
    messages: list[_WireMessage]


def parse_event(body: bytes) -> IngestEvent:
    """Decode and validate an ingest request body; ValueError says what is wrong. Timestamps are
    POSIX seconds or ISO-8601 strings, as the log-tail reads them (tap.validate.parse_timestamp)."""
    wire = decode(body, _WireEvent)
    if not wire.scope.strip() or len(wire.scope) > MAX_SCOPE:
        raise ValueError(f"scope must be 1-{MAX_SCOPE} characters")
    problem = text_problem("conversation", wire.conversation, MAX_ID)
    if problem:
        raise ValueError(problem)
    if len(wire.messages) > MAX_MESSAGES:
        raise ValueError(f"at most {MAX_MESSAGES} messages per request")
    messages = []
    for index, message in enumerate(wire.messages):
        try:
            timestamp = parse_timestamp(message.timestamp)
        except ValueError as exc:
            raise ValueError(f"messages[{index}].timestamp: {exc}") from None
        if len(message.id) > MAX_ID:
            raise ValueError(f"messages[{index}].id must be at most {MAX_ID} characters")
        messages.append(
            Message(role=message.role, content=message.content, name=message.name, id=message.id, timestamp=timestamp)
        )
    return IngestEvent(scope=wire.scope, conversation=wire.conversation, source=wire.source, messages=messages)


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
        kept = HARD_CAP_FACTOR * self.queue.chunk_tokens  # what chunking keeps of one turn
        turns = prepare_turns(messages, conversation=event.conversation, max_tokens=kept)
        if not turns:
            return 0
        added = self.queue.add_turns(event.scope, event.conversation, event.source, turns)
        self.turns_ingested += added
        return added

    async def ingest_async(self, event: IngestEvent) -> int:
        """ingest() off the event loop."""
        return await asyncio.to_thread(self.ingest, event)
