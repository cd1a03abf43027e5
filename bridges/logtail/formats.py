"""What every log format parser provides, the per-file context it gets, and format detection.

A parser is created for one pass over one file, from the file's persisted state. The tailer feeds
it complete lines in order (`feed`, which returns a skip reason for a line it cannot read), asks for
the events that are decided (`take`) at checkpoints and at the end of the pass, and then commits
the parser's resume point and `state()`. A parser never emits the same message twice from the same
bytes, and message ids are derived from content and position (or taken from the log), so a re-read
after a crash or a truncation produces ids the ingestion queue already knows.

Skip reasons in WARN_REASONS are broken lines (a warning names the file and line); others are
counted only. Detection and the format registry live in bridges.logtail.detect.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import msgspec

from bridges.logtail.lines import LogLine
from tap.records import IngestEvent, Message
from tap.validate import parse_timestamp as parse_iso_or_posix

Format = Literal["claude-code", "jsonl", "text"]
FORMATS: tuple[str, ...] = ("auto", "claude-code", "jsonl", "text")
BROKEN_JSON = "broken JSON"
BAD_SHAPE = "unexpected JSON shape"
TOO_LONG = "line too long"
WARN_REASONS = frozenset({BROKEN_JSON, BAD_SHAPE, TOO_LONG})
MAX_SCOPE = 256


@dataclass
class FileContext:
    """What a parser knows about its file: defaults for scope and conversation, saved state."""

    path: Path
    scope: str
    conversation: str
    scope_override: str = ""
    state: dict[str, Any] = field(default_factory=dict)


class Parser(Protocol):
    """One pass of one format over one file."""

    def feed(self, line: LogLine, lineno: int) -> str | None:
        """Consume a complete line; returns why it was skipped, or None."""
        ...

    def want_checkpoint(self) -> bool:
        """True when enough is pending that events should be taken now (bounds memory)."""
        ...

    def take(self, *, final: bool) -> list[IngestEvent]:
        """Events decided so far; `final` means the file is quiet, so nothing pending is waiting."""
        ...

    def resume_point(self) -> tuple[int, int] | None:
        """(offset, line number) a later pass must re-read from, or None: after the last fed line."""
        ...

    def state(self) -> dict[str, Any]:
        """Small JSON-able state to persist with the offset."""
        ...


def decode_line[T](line: LogLine, decoder: msgspec.json.Decoder[T]) -> tuple[T, None] | tuple[None, str | None]:
    """(decoded item, None), or (None, the reason to skip it); a blank line is (None, None)."""
    if line.data is None:
        return None, TOO_LONG
    if not line.data.strip():
        return None, None
    try:
        return decoder.decode(line.data), None
    except msgspec.ValidationError:
        return None, BAD_SHAPE
    except msgspec.DecodeError:
        return None, BROKEN_JSON


def digest(*parts: str, size: int = 16) -> str:
    """A short stable hex digest (unit-separator joined)."""
    return hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:size]


def fit_scope(scope: str) -> str:
    """A scope that ingestion accepts: at most MAX_SCOPE characters (long ones keep a hash)."""
    scope = scope.strip() or "default"
    if len(scope) <= MAX_SCOPE:
        return scope
    return scope[: MAX_SCOPE - 13] + "…" + digest(scope, size=12)


def events_by_conversation(
    keyed: Iterable[tuple[str, str, Message]],
) -> list[IngestEvent]:
    """One `logtail` event per (scope, conversation), messages in arrival order."""
    groups: dict[tuple[str, str], list[Message]] = {}
    for scope, conversation, message in keyed:
        groups.setdefault((scope, conversation), []).append(message)
    return [
        IngestEvent(scope=scope, conversation=conversation, source="logtail", messages=messages)
        for (scope, conversation), messages in groups.items()
    ]


def parse_timestamp(value: str | None) -> float:
    """POSIX seconds of an ISO-8601 timestamp (`Z` or offset; naive means UTC); 0.0 when unknown."""
    if not value:
        return 0.0
    try:
        return parse_iso_or_posix(value)  # the parser `POST /tap/ingest` uses
    except ValueError:
        return 0.0
