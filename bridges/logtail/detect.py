"""Format detection (`auto`) and the parser registry.

Detection looks at the first non-blank complete line of a file: a JSON object with a Claude Code
entry `type` and a `sessionId`/`uuid`/`leafUuid` is `claude-code`; a JSON object with `role` and
`content` is `jsonl`; a `Speaker: text` line is `text`; anything else is not a chat log (the file is
reported and skipped). The chosen format is stored with the file's offset, so it is decided once.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from bridges.logtail.claude_code import ClaudeCodeParser
from bridges.logtail.formats import FileContext, Format, Parser
from bridges.logtail.jsonl import JsonlParser
from bridges.logtail.text import TextParser, speaker_line

__all__ = ["detect", "make_parser"]

CLAUDE_CODE_TYPES = frozenset(
    {"user", "assistant", "system", "progress", "attachment", "summary", "custom-title", "ai-title", "tag"}
)


def detect(head: Iterable[bytes]) -> Format | None:
    """The format of a file from its first complete lines; None when it is none of them."""
    for raw in head:
        line = raw.strip()
        if not line:
            continue
        if line.startswith(b"{"):
            return _detect_json(line)
        return "text" if speaker_line(line.decode("utf-8", "replace")) is not None else None
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
