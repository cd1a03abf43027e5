"""Reading complete lines from an offset, with bounded memory.

`read_lines(handle, start)` yields every *complete* line (ending in `\\n`) from byte `start` on, with
its byte range. It stops before a trailing partial line (a writer may still be adding to it) unless
`take_partial` is set (the file has been quiet long enough for that line to be its real end).

Invariants: memory stays below about `block + max_line` bytes whatever the file size; a line longer
than `max_line` is not buffered but reported once as `LogLine(data=None, …)` and skipped up to its
newline; offsets are exact byte positions, so `LogLine.end` is a safe offset to resume from.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

BLOCK = 1 << 20
MAX_LINE = 32 << 20


@dataclass(frozen=True, slots=True)
class LogLine:
    """One line without its newline; `data` is None for a line over the size limit."""

    data: bytes | None
    start: int
    end: int


def read_lines(
    handle: BinaryIO, start: int, *, take_partial: bool = False, block: int = BLOCK, max_line: int = MAX_LINE
) -> Iterator[LogLine]:
    """Complete lines from `start`; a trailing line without newline only when `take_partial`."""
    handle.seek(start)
    buffer = bytearray()
    buffer_start = start  # file offset of buffer[0]
    skip_from = -1  # start offset of an over-long line whose bytes are being dropped, else -1
    while chunk := handle.read(block):
        buffer += chunk
        cut = 0
        while (newline := buffer.find(b"\n", cut)) != -1:
            if skip_from >= 0:
                yield LogLine(None, skip_from, buffer_start + newline + 1)
                skip_from = -1
            else:
                yield LogLine(bytes(buffer[cut:newline]), buffer_start + cut, buffer_start + newline + 1)
            cut = newline + 1
        del buffer[:cut]
        buffer_start += cut
        if len(buffer) > max_line:  # keep only the position, not the bytes, of an over-long line
            skip_from = buffer_start if skip_from < 0 else skip_from
            buffer_start += len(buffer)
            buffer.clear()
    if take_partial and (buffer or skip_from >= 0):
        end = buffer_start + len(buffer)
        yield LogLine(None, skip_from, end) if skip_from >= 0 else LogLine(bytes(buffer), buffer_start, end)
