"""Generic JSONL chat logs: one message per line, the message shape of `POST /tap/ingest`.

A line is `{"role": "user"|"assistant", "content": str, "name"?, "id"?, "conversation"?,
"timestamp"?}` (`content` may also be a list of `{"type": "text", "text": …}` blocks; `timestamp` is
POSIX seconds or ISO-8601). Lines without a `conversation` belong to the file's conversation; the
scope is the configured one, else the file's. A line without an `id` gets one derived from the
conversation, its byte offset and its text, so re-reading the same bytes yields the same id and a
rotated file with new text at the same offsets does not.

Every line is decided when it is read: the parser resumes after the last line it was fed, and
emits at most `batch` messages per checkpoint.
"""

from __future__ import annotations

from typing import Any

import msgspec

from bridges.logtail.formats import (
    BAD_SHAPE,
    FileContext,
    decode_line,
    digest,
    events_by_conversation,
    parse_timestamp,
)
from bridges.logtail.lines import LogLine
from tap.records import IngestEvent, Message

__all__ = ["JsonlParser"]

BATCH = 2000


class _PartBlock(msgspec.Struct):
    type: str = ""
    text: str | None = None


class _Line(msgspec.Struct):
    role: str | None = None
    content: str | list[_PartBlock | str] | None = None
    name: str | None = None
    id: str | int | None = None
    conversation: str | int | None = None
    timestamp: float | str | None = None


_DECODER = msgspec.json.Decoder(_Line)


def _text(content: str | list[_PartBlock | str] | None) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n\n".join(
        block if isinstance(block, str) else (block.text or "")
        for block in content
        if isinstance(block, str) or block.type == "text"
    )


class JsonlParser:
    """One message per line; nothing is held back between lines."""

    def __init__(self, ctx: FileContext, *, batch: int = BATCH) -> None:
        self._ctx = ctx
        self._batch = batch
        self._pending: list[tuple[str, str, Message]] = []

    def feed(self, line: LogLine, lineno: int) -> str | None:
        """Decode one message line."""
        item, skipped = decode_line(line, _DECODER)
        if item is None:
            return skipped
        if not item.role:
            return BAD_SHAPE
        text = _text(item.content)
        conversation = str(item.conversation) if item.conversation not in (None, "") else self._ctx.conversation
        when = item.timestamp
        timestamp = parse_timestamp(when) if isinstance(when, str) else float(when or 0.0)
        message_id = str(item.id) if item.id not in (None, "") else "j_" + digest(conversation, str(line.start), text)
        message = Message(role=item.role, content=text, name=item.name or "", id=message_id, timestamp=timestamp)
        self._pending.append((self._ctx.scope, conversation, message))
        return None

    def want_checkpoint(self) -> bool:
        """A full batch is waiting."""
        return len(self._pending) >= self._batch

    def take(self, *, final: bool) -> list[IngestEvent]:
        """Every message read since the last checkpoint."""
        events = events_by_conversation(self._pending)
        self._pending = []
        return events

    def resume_point(self) -> tuple[int, int] | None:
        """Nothing is held back."""
        return None

    def state(self) -> dict[str, Any]:
        """No state beyond the offset."""
        return {}
