"""Format detection (`auto`) and the parser registry.

Detection looks at the first complete lines of a file. When the first non-blank one is a JSON
object, it decides: a Claude Code entry `type` with a `sessionId`/`uuid`/`leafUuid` is
`claude-code`, `role` and `content` is `jsonl`, anything else is no chat log. Otherwise the file is
`text` when one of its first TEXT_LINES non-blank lines is a `Speaker: text` line (a title or an
export header may come first). Anything else is not a chat log (the file is reported and skipped).
The chosen format is stored with the file's offset, so it is decided once.
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
CLAUDE_CODE_TYPES = frozenset(
    {"user", "assistant", "system", "progress", "attachment", "summary", "custom-title", "ai-title", "tag"}
)


def detect(head: Iterable[bytes]) -> Format | None:
    """The format of a file from its first complete lines; None when it is none of them."""
    lines = (raw.strip() for raw in head)
    for number, line in enumerate(line for line in lines if line):
        if number == 0 and line.startswith(b"{"):
            return _detect_json(line)
        if speaker_line(line.decode("utf-8", "replace")) is not None:
            return "text"
        if number + 1 >= TEXT_LINES:
            break
    return None


def _detect_json(line: bytes) -> Format | None:
    try:
        value = msgspec.json.decode(line)
    except msgspec.DecodeError:
        return None
    if not isinstance(value, dict):
        return None
    if value.get("type") in CLAUDE_CODE_TYPES and ({"sessionId", "uuid", "leafUuid"} & value.keys()):
        return "claude-code"
    if "role" in value and "content" in value:
        return "jsonl"
    return None


def make_parser(fmt: Format, ctx: FileContext) -> Parser:
    """A fresh parser of a format for one pass over one file."""
    if fmt == "claude-code":
        return ClaudeCodeParser(ctx)
    if fmt == "jsonl":
        return JsonlParser(ctx)
    return TextParser(ctx)
