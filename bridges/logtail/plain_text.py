"""Plain-text transcripts: `User:` / `Assistant:` (or `Name:`) prefixed messages.

A message starts at a line `Speaker: text` (optionally after a bracketed timestamp,
`[2024-05-01 10:00] Ann: hi`) and runs until the next speaker line, so messages may span many
lines. Speakers: `User`/`Human`/`Me`/`You` are the user, `Assistant`/`AI`/`Bot`/`Claude`/
`ChatGPT`/… the assistant, `System` is dropped; any other capitalised name (`Ann`, `Mary Jane`) is
a person in the chat. Words that often start a line inside a message (`Note:`, `Example:`, …) are
not speakers.

A message is only complete when the next speaker line arrives, or when the pass is `final`
(one-shot ingestion, or a followed file that has been quiet); until then the parser's resume point
is the start of that message, so a later pass re-reads it whole. Text after the end of a flushed
message continues under the last speaker (kept in the state). Message ids derive from the
conversation, the byte offset of the speaker line and the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from bridges.logtail.formats import TOO_LONG, FileContext, digest, events_by_conversation, parse_timestamp
from bridges.logtail.lines import LogLine
from tap.records import IngestEvent, Message

__all__ = ["TextParser", "speaker_line"]

BATCH = 2000
MAX_MESSAGE = 4 << 20
BEFORE_FIRST_SPEAKER = "text before the first speaker"

_SPEAKER = re.compile(
    r"^(?:\[(?P<ts>[^\]]{4,40})\]\s*)?(?P<name>[A-Za-z][\w'.-]*(?: [A-Za-z][\w'.-]*){0,2})\s?:(?:\s+(?P<text>.*))?$"
)
_USER = frozenset({"user", "human", "me", "you"})
_ASSISTANT = frozenset({"assistant", "ai", "bot", "claude", "chatgpt", "gpt", "model", "llm", "copilot", "gemini"})
_SYSTEM = frozenset({"system"})
_NOT_NAMES = frozenset(
    "note example warning error step output input answer question summary tip todo ps edit update source "
    "result usage reason hint re subject from to date cc bcc http https file path command see also "
    "important caution info debug trace fixme".split()
)


@dataclass(frozen=True, slots=True)
class Speaker:
    """Who speaks on a speaker line, and what follows the colon."""

    role: str
    name: str
    text: str
    timestamp: float


def speaker_line(line: str) -> Speaker | None:
    """The speaker of a `Name: text` line, or None when the line is not one."""
    match = _SPEAKER.match(line)
    if match is None:
        return None
    name = match["name"]
    key = name.lower()
    if key in _USER:
        role, shown = "user", ""
    elif key in _ASSISTANT:
        role, shown = "assistant", ""
    elif key in _SYSTEM:
        role, shown = "system", ""
    elif key in _NOT_NAMES or not all(word[0].isupper() for word in name.split()):
        return None
    else:
        role, shown = "user", name
    return Speaker(role, shown, match["text"] or "", parse_timestamp(_iso(match["ts"])))


def _iso(stamp: str | None) -> str | None:
    return stamp.strip().replace(" ", "T", 1) if stamp else None


@dataclass
class _Pending:
    start: int
    lineno: int
    speaker: Speaker
    lines: list[str] = field(default_factory=list)
    size: int = 0


class TextParser:
    """Speaker-prefixed transcripts; the last message waits for the next speaker or a final pass."""

    def __init__(self, ctx: FileContext, *, batch: int = BATCH) -> None:
        self._ctx = ctx
        self._batch = batch
        self._ready: list[Message] = []
        self._pending: _Pending | None = None
        saved = ctx.state.get("speaker")
        self._last: Speaker | None = Speaker(str(saved[0]), str(saved[1]), "", 0.0) if isinstance(saved, list) else None

    def feed(self, line: LogLine, lineno: int) -> str | None:
        """Start a message at a speaker line, else extend the current one."""
        if line.data is None:
            return TOO_LONG
        text = line.data.decode("utf-8", "replace").rstrip("\r")
        speaker = speaker_line(text)
        if speaker is not None:
            self._close()
            self._pending = _Pending(line.start, lineno, speaker, [speaker.text], len(speaker.text))
            return None
        if self._pending is None:
            if not text.strip():
                return None
            if self._last is None:
                return BEFORE_FIRST_SPEAKER
            self._pending = _Pending(line.start, lineno, self._last)
        if self._pending.size >= MAX_MESSAGE:  # bound memory: a giant message continues as a new one
            last = self._pending.speaker
            self._close()
            self._pending = _Pending(line.start, lineno, last)
        self._pending.lines.append(text)
        self._pending.size += len(text) + 1
        return None

    def _close(self) -> None:
        pending, self._pending = self._pending, None
        if pending is None:
            return
        self._last = pending.speaker
        body = "\n".join(pending.lines).strip()
        if not body:
            return
        who = pending.speaker
        message_id = "x_" + digest(self._ctx.conversation, str(pending.start), body)
        self._ready.append(Message(role=who.role, content=body, name=who.name, id=message_id, timestamp=who.timestamp))

    def want_checkpoint(self) -> bool:
        """A full batch of finished messages is waiting."""
        return len(self._ready) >= self._batch

    def take(self, *, final: bool) -> list[IngestEvent]:
        """Finished messages (and, when final, the one still open)."""
        if final:
            self._close()
        ready, self._ready = self._ready, []
        return events_by_conversation((self._ctx.scope, self._ctx.conversation, m) for m in ready)

    def resume_point(self) -> tuple[int, int] | None:
        """The start of the open message, which a later pass must read again."""
        return (self._pending.start, self._pending.lineno - 1) if self._pending is not None else None

    def state(self) -> dict[str, Any]:
        """The last speaker, for text that continues after a flushed message."""
        last = self._last
        return {"speaker": [last.role, last.name]} if last is not None else {}
