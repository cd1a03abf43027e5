"""Cut a long model answer into Telegram messages (pure).

Telegram refuses a `sendMessage` text longer than 4,096 characters (`MessageLimit.MAX_TEXT_LENGTH`,
counted after entity parsing, in UTF-16 code units like every Bot API offset).

Invariants of `split_message(text, limit)`:
- every chunk is non-empty and at most `limit` UTF-16 code units long (so also after rendering:
  bridges.telegram.markdown never makes the visible text longer);
- cuts prefer paragraph boundaries, then line breaks, then spaces; a word is cut only when it is
  longer than a whole message;
- a fenced code block is never cut open: it travels whole, or, when it alone is too long, as
  several complete blocks (each re-opened with the same ``` fence and language), so no chunk
  starts or ends inside a code block and the Markdown of every chunk renders on its own;
- the text of the chunks, joined back, is the input up to whitespace at the cuts (and the extra
  fences of a split code block).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_TEXT_LENGTH = 4096
_FENCE = re.compile(r"^\s{0,3}```")
_SEPARATORS = ("\n", " ")


def utf16_len(text: str) -> int:
    """Length as Telegram counts it (UTF-16 code units: an emoji outside the BMP counts 2)."""
    return len(text.encode("utf-16-le")) // 2


@dataclass(frozen=True)
class Paragraph:
    """A paragraph, or a fenced code block (`fence` is its opening line, e.g. "```python")."""

    text: str
    fence: str = ""


def blocks_of(text: str) -> list[Paragraph]:
    """Paragraphs (separated by blank lines) and fenced code blocks (kept whole, blank lines and all)."""
    blocks: list[Paragraph] = []
    prose: list[str] = []
    code: list[str] | None = None
    for line in text.split("\n"):
        if code is not None:
            code.append(line)
            if _FENCE.match(line) and len(code) > 1:
                blocks.append(Paragraph("\n".join(code), fence=code[0].strip()))
                code = None
        elif _FENCE.match(line):
            _flush(prose, blocks)
            code = [line]
        elif line.strip():
            prose.append(line)
        else:
            _flush(prose, blocks)
    _flush(prose, blocks)
    if code is not None:  # an unclosed fence: close it so the chunk renders as code
        blocks.append(Paragraph("\n".join([*code, "```"]), fence=code[0].strip()))
    return blocks


def _flush(prose: list[str], blocks: list[Paragraph]) -> None:
    if prose:
        blocks.append(Paragraph("\n".join(prose)))
        prose.clear()


def pack(parts: list[str], sep: str, limit: int) -> list[str]:
    """Join consecutive parts with `sep` as long as the result fits in `limit`."""
    chunks: list[str] = []
    for part in parts:
        if chunks and utf16_len(chunks[-1]) + utf16_len(sep) + utf16_len(part) <= limit:
            chunks[-1] = chunks[-1] + sep + part
        else:
            chunks.append(part)
    return chunks


def hard_cut(text: str, limit: int) -> list[str]:
    """Cut at code-point boundaries into pieces of at most `limit` UTF-16 units."""
    pieces: list[str] = []
    current: list[str] = []
    size = 0
    for char in text:
        width = utf16_len(char)
        if current and size + width > limit:
            pieces.append("".join(current))
            current = []
            size = 0
        current.append(char)
        size += width
    if current:
        pieces.append("".join(current))
    return pieces


def split_prose(text: str, limit: int, level: int = 0) -> list[str]:
    """A paragraph in pieces ≤ limit: at line breaks, then spaces, then anywhere."""
    if utf16_len(text) <= limit:
        return [text] if text.strip() else []
    if level == len(_SEPARATORS):
        return hard_cut(text, limit)
    sep = _SEPARATORS[level]
    parts = [piece for part in text.split(sep) for piece in split_prose(part, limit, level + 1)]
    return pack(parts, sep, limit)


def split_code(block: Paragraph, limit: int) -> list[str]:
    """A code block too long for one message, as several complete fenced blocks."""
    body = block.text.split("\n")[1:-1]
    overhead = utf16_len(block.fence) + utf16_len("```") + 2
    room = max(1, limit - overhead)
    lines = [piece for line in body for piece in (hard_cut(line, room) if utf16_len(line) > room else [line])]
    return [f"{block.fence}\n{group}\n```" for group in pack(lines, "\n", room)]


def split_message(text: str, limit: int = MAX_TEXT_LENGTH) -> list[str]:
    """`text` as messages of at most `limit` UTF-16 units (see the module invariants)."""
    if limit < 16:
        raise ValueError("limit must leave room for a code fence (>= 16)")
    pieces: list[str] = []
    for block in blocks_of(text.strip()):
        if utf16_len(block.text) <= limit:
            pieces.append(block.text)
        elif block.fence:
            pieces.extend(split_code(block, limit))
        else:
            pieces.extend(split_prose(block.text, limit))
    return [chunk for chunk in pack(pieces, "\n\n", limit) if chunk.strip()]
