"""Limits on values that come from outside and end up stored: what is refused, and why.

A value that passes here can be stored and read back by every reader (recall renders dates, Chroma
keeps ints as int64): timestamps are finite POSIX seconds from 0 (unknown) to the end of year 9999
(the last second `datetime` can show), ids and scopes are non-blank and bounded, counts fit int64.
The entry points (`POST /tap/ingest`, import, the admin API) refuse a record that fails with a 400
naming the field; sources that cannot be answered (log lines) get unknown timestamps instead
(tap.ingest.entry).
"""

from __future__ import annotations

import math
from datetime import UTC, date, datetime

from tap.records import Memory

MAX_TIMESTAMP = 253402300799.0  # 9999-12-31T23:59:59Z
MAX_ID = 256
MAX_SCOPE = 256
MAX_COUNT = 2**53


def timestamp_ok(value: float) -> bool:
    """A finite POSIX time from 0 (unknown) to the end of year 9999."""
    return isinstance(value, int | float) and math.isfinite(value) and 0 <= value <= MAX_TIMESTAMP


TIMESTAMP_FORMATS = (
    "POSIX seconds as a number (1714564800 or 1714564800.25) or ISO-8601 as a string "
    '("2024-05-01T12:00:00Z", "2024-05-01T14:00:00+02:00", "2024-05-01"; '
    "without an offset it is UTC)"
)


def parse_timestamp(value: float | str) -> float:
    """POSIX seconds of a timestamp given as a number or an ISO-8601 string (`Z` or an offset; none
    means UTC); ValueError names the accepted formats when it is neither, or out of range."""
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip())
        except ValueError:
            raise ValueError(f"{value!r} is not a timestamp: use {TIMESTAMP_FORMATS}") from None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        try:
            value = parsed.timestamp()
        except (OverflowError, OSError, ValueError):
            value = -1.0
    if not timestamp_ok(value):
        raise ValueError(f"{value!r} is out of range: from 0 (unknown) to {MAX_TIMESTAMP:.0f} (the end of year 9999)")
    return float(value)


def safe_day(value: float) -> date | None:
    """The UTC day of a timestamp; None when it is unknown or cannot be shown (never raises)."""
    if not timestamp_ok(value) or value == 0:
        return None
    try:
        return datetime.fromtimestamp(value, UTC).date()
    except (OverflowError, OSError, ValueError):
        return None


def text_problem(name: str, value: str, limit: int) -> str:
    """Why an id-like string is refused ("" when it is fine): blank, too long, control characters."""
    if not value.strip():
        return f"{name} must not be empty"
    if len(value) > limit:
        return f"{name} must be at most {limit} characters"
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        return f"{name} must not contain control characters"
    return ""


def memory_problem(memory: Memory) -> str:
    """Why a memory record (an import line) cannot be stored ("" when it can)."""
    problem = text_problem("id", memory.id, MAX_ID) or text_problem("scope", memory.scope, MAX_SCOPE)
    if problem:
        return problem
    if not memory.content.strip():
        return "content must not be empty"
    for name in ("created_at", "updated_at", "valid_from", "last_accessed"):
        if not timestamp_ok(getattr(memory, name)):
            return f"{name} must be a POSIX time in seconds from 0 to {MAX_TIMESTAMP:.0f}"
    if not 0 <= memory.access_count <= MAX_COUNT:
        return f"access_count must be from 0 to {MAX_COUNT}"
    for name in ("supersedes", "superseded_by", "conversation"):
        if len(getattr(memory, name)) > MAX_ID:
            return f"{name} must be at most {MAX_ID} characters"
    return ""
