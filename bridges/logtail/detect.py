"""Format detection (`auto`) and the parser registry.

Detection looks at the complete lines at the start of a file (the first DETECT_LINES non-blank
ones). When the first non-blank one is a JSON object, the file is JSON lines and the first line
that says what it is decides: `role` and `content` is `jsonl`; a Claude Code entry (a string
`type` with a `sessionId`, as Claude Code's `queue-operation` and `api-request-route` lines that
now open its transcripts; or a transcript entry `type` with a `uuid`/`leafUuid`) is
`claude-code`; lines that say neither (a `file-history-snapshot`, a broken line) are passed over.
Otherwise the file is `text` when one of its first TEXT_LINES non-blank lines is a `Speaker: text`
line (a title or an export header may come first). Anything else is undecided: `detect` returns
None, the tailer reports the file as not (yet) a chat log and looks at it again when it grows, or
reads it in the format given.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from bridges.logtail.claude_code import ClaudeCodeParser
from bridges.logtail.formats import FileContext, Format, Parser
from bridges.logtail.jsonl import JsonlParser
from bridges.logtail.plain_text import TextParser, speaker_line

__all__ = ["detect", "make_parser"]

TEXT_LINES = 20
DETECT_LINES = 200
CLAUDE_CODE_TYPES = frozenset(
    {"user", "assistant", "system", "progress", "attachment", "summary", "custom-title", "ai-title", "tag"}
)


def detect(head: Iterable[bytes]) -> Format | None:
    """The format of a file from its first complete lines; None when they do not tell (yet)."""
    lines = (raw.strip() for raw in head)
    json_lines = False
    for number, line in enumerate(line for line in lines if line):
        if number >= DETECT_LINES or (not json_lines and number >= TEXT_LINES):
            break
        if number == 0 and line.startswith(b"{"):
            json_lines = True
        if json_lines:
            found = _detect_json(line)
            if found is not None:
                return found
        elif speaker_line(line.decode("utf-8", "replace")) is not None:
            return "text"
    return None


def _detect_json(line: bytes) -> Format | None:
    """What one JSON line says the file is (None: this line does not tell)."""
    try:
        value = msgspec.json.decode(line)
    except msgspec.DecodeError:
        return None
    if not isinstance(value, dict):
        return None
    if "role" in value and "content" in value:
        return "jsonl"
    kind = value.get("type")
    if isinstance(kind, str) and isinstance(value.get("sessionId"), str):
        return "claude-code"
    if kind in CLAUDE_CODE_TYPES and ({"uuid", "leafUuid"} & value.keys()):
        return "claude-code"
    return None


def make_parser(fmt: Format, ctx: FileContext) -> Parser:
    """A fresh parser of a format for one pass over one file."""
    if fmt == "claude-code":
        return ClaudeCodeParser(ctx)
    if fmt == "jsonl":
        return JsonlParser(ctx)
    return TextParser(ctx)
