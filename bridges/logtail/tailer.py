"""The tailer: reads every watched file from its committed offset and hands events to a sink.

One `poll()` is one pass: find the files (bridges.logtail.discover), and for each file whose size or
mtime changed (or that has data waiting), recognise it (bridges.logtail.progress_db: identity, head and
mark checks; rotation and truncation), feed its new complete lines to its format's parser, hand the
events to the sink at each checkpoint and at the end, and only then commit the new offset. The sink
is the one ingestion entry point (`Ingestor.ingest`, or `POST /tap/ingest` of a running server).

Exactly once: an offset is committed after its events were accepted by the sink; a crash between
the two re-reads one batch whose turn ids the queue already has. A last line without a newline is
left for later unless the file has been quiet for `quiet_s` seconds; an open text message is
flushed on one-shot passes and when the file is quiet.

Forgetting: after a whole pass over the roots (not stopped half-way), `forget_gone` deletes the
records of files under those roots that are gone — nothing at the recorded path, or another file
there, and the file was not met elsewhere in the pass — so logtail.db does not grow with every
deleted or rotated-away transcript. A file that comes back is a new file, read from the start (the
queue drops the turns it already has). A file that merely cannot be looked at is kept.

Files that are no chat log (yet): with format `auto`, a file whose first lines say no format
(bridges.logtail.detect) is recorded as such (`stats.unrecognised`, and one warning per file through
`on_warning` that says how to read it anyway), never for good: it is looked at again whenever it
grows, and read at once from its start when a format is given (`fmt`). A file recognised late gets
the scope and conversation its format gives.

Errors: an unreadable file or directory is recorded in `stats.errors` (and reported once through
`on_error`); a broken line is counted and reported through `on_warning` with file and line; an
exception from the sink propagates (nothing of that batch is committed). `stop_requested` is
checked between files and after each checkpoint, so a long backfill stops soon after being asked.
"""

from __future__ import annotations

import logging
import os
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Literal

from bridges.logtail.detect import detect, make_parser
from bridges.logtail.discover import covered_by, find_files
from bridges.logtail.formats import WARN_REASONS, FileContext, Format, Parser, fit_scope
from bridges.logtail.lines import read_lines
from bridges.logtail.progress_db import FileRecord, OffsetStore, head_hash, head_matches, head_of, mark_at
from tap.records import IngestEvent

__all__ = ["Choice", "Sink", "Skipped", "TailStats", "Tailer"]

log = logging.getLogger("tap.logtail")
Sink = Callable[[Sequence[IngestEvent]], int]
Choice = Literal["auto", "claude-code", "jsonl", "text"]
UNKNOWN = "none"
QUIET_S = 5.0
KEEP_SKIPPED = 100
DETECT_BYTES = 65536
_FORMATS: dict[str, Format] = {"claude-code": "claude-code", "jsonl": "jsonl", "text": "text"}


@dataclass(frozen=True)
class Skipped:
    """A line that was not ingested, and why."""

    path: str
    line: int
    reason: str


@dataclass
class TailStats:
    """Counters of one tailer over its lifetime (what the CLI summary shows)."""

    files: set[str] = field(default_factory=set)
    formats: dict[str, str] = field(default_factory=dict)
    lines: int = 0
    messages: int = 0
    turns: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    skipped_lines: list[Skipped] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    unrecognised: set[str] = field(default_factory=set)
    waiting: set[str] = field(default_factory=set)
    files_forgotten: int = 0


class Tailer:
    """Reads watched paths incrementally into a sink; one instance per process and data dir."""

    def __init__(
        self,
        roots: Sequence[str],
        store: OffsetStore,
        sink: Sink,
        *,
        fmt: Choice = "auto",
        scope: str = "",
        quiet_s: float = QUIET_S,
        now: Callable[[], float] = time.time,
        on_warning: Callable[[str], None] | None = None,
        on_error: Callable[[str, str], None] | None = None,
        on_progress: Callable[[TailStats], None] | None = None,
    ) -> None:
        self.roots = list(roots)
        self.store = store
        self.sink = sink
        self.fmt = fmt
        self.scope = scope.strip()
        self.quiet_s = quiet_s
        self.stats = TailStats()
        self._root_errors: set[str] = set()
        self._reported_unrecognised: set[str] = set()
        self._met: set[tuple[int, int]] = set()  # identities of the files looked at in this pass
        self._now = now
        self.on_warning = on_warning
        self.on_error = on_error
        self.on_progress = on_progress
        self.stop_requested: Callable[[], bool] = lambda: False

    def discover(self) -> list[Path]:
        """The files the roots name now (errors recorded); starts a pass."""
        self._met.clear()
        found = find_files(self.roots)
        current = {path for path, _ in found.errors}
        for gone in self._root_errors - current:  # a missing root that appeared since
            self.stats.errors.pop(gone, None)
        self._root_errors = current
        for path, reason in found.errors:
            self._error(path, reason)
        return found.files

    def poll(self, *, one_shot: bool = False, files: Sequence[Path] | None = None) -> int:
        """One pass over every file (then forget the gone ones, if it was whole); returns the new turns queued."""
        before = self.stats.turns
        whole = files is None
        for path in self.discover() if files is None else files:
            if self.stop_requested():
                whole = False
                break
            self.read_file(path, one_shot=one_shot)
        if whole:
            self.forget_gone()
        return self.stats.turns - before

    def forget_gone(self) -> int:
        """Delete the records of the roots' files that are gone (see the module docstring); returns how many.

        Meant for the end of a whole pass (`discover`, then `read_file` for each file), so that a
        renamed file whose record still holds the old path is recognised by its identity and kept.
        """
        covered = covered_by(self.roots)
        forgotten = 0
        for dev, ino, path in self.store.identities():
            if (dev, ino) in self._met or not covered(path) or not _gone(path, dev, ino):
                continue
            if self.store.forget(dev, ino, path):
                forgotten += 1
                log.info("logtail: %s is gone; forgetting where its reading stopped", path)
        self.stats.files_forgotten += forgotten
        return forgotten

    def read_file(self, path: Path, *, one_shot: bool = False) -> None:
        """Read what is new in one file (see the module docstring)."""
        try:
            status = os.stat(path)
            self._met.add((status.st_dev, status.st_ino))
            known = self.store.get(status.st_dev, status.st_ino)
            if known is not None and self._unchanged(known, status, one_shot=one_shot):
                self._seen(path, known)
                if known.format == UNKNOWN:
                    self._unrecognised(path)
                return
            with open(path, "rb") as handle:
                self._read(path, handle, one_shot=one_shot)
        except (PermissionError, FileNotFoundError, IsADirectoryError, NotADirectoryError) as exc:
            self._error(str(path), exc.strerror or type(exc).__name__)
        except OSError as exc:
            self._error(str(path), exc.strerror or str(exc))
        else:
            self.stats.errors.pop(str(path), None)
        if self.on_progress is not None:
            self.on_progress(self.stats)

    def _unchanged(self, record: FileRecord, status: os.stat_result, *, one_shot: bool) -> bool:
        """Nothing to do: same size and mtime as last time, and nothing waiting to be taken now."""
        if record.seen_size != status.st_size or record.seen_mtime != status.st_mtime_ns:
            return False
        if record.format == UNKNOWN:
            return self.fmt == "auto"  # a format given now reads it; auto waits for it to grow
        waiting = record.offset < status.st_size and (one_shot or self._quiet(status))
        return not waiting

    def _quiet(self, status: os.stat_result) -> bool:
        return self._now() - status.st_mtime >= self.quiet_s

    def _read(self, path: Path, handle: BinaryIO, *, one_shot: bool) -> None:
        fd = handle.fileno()
        status = os.fstat(fd)
        record = self._recognise(path, fd, status)
        if record is None:
            self.stats.waiting.add(str(path))
            return
        self._seen(path, record)
        if record.format == UNKNOWN:
            self._unrecognised(path)
            self._save_seen(record, status)
            return
        self.stats.unrecognised.discard(str(path))
        quiet = self._quiet(status)
        parser = make_parser(self._format(record), self._context(path, record))
        lineno, end = record.lines, record.offset
        for line in read_lines(handle, record.offset, take_partial=quiet):
            lineno, end = lineno + 1, line.end
            self.stats.lines += 1
            reason = parser.feed(line, lineno)
            if reason is not None:
                self._skip(path, lineno, reason)
            if parser.want_checkpoint():
                self._commit(record, parser, fd, end, lineno, final=False)
                if self.stop_requested():  # committed: the next pass goes on from here
                    return
        self._commit(record, parser, fd, end, lineno, final=one_shot or quiet)
        if end < status.st_size and not quiet:
            self.stats.waiting.add(str(path))
        else:
            self.stats.waiting.discard(str(path))
        self._save_seen(record, status)

    def _format(self, record: FileRecord) -> Format:
        fmt = _FORMATS.get(self.fmt if self.fmt != "auto" else record.format)
        if fmt is None:
            raise ValueError(f"unknown log format {record.format!r}")
        return fmt

    def _context(self, path: Path, record: FileRecord) -> FileContext:
        return FileContext(
            path=path,
            scope=fit_scope(self.scope or record.scope),
            conversation=record.conversation,
            scope_override=fit_scope(self.scope) if self.scope else "",
            state=record.parser_state,
        )

    def _commit(self, record: FileRecord, parser: Parser, fd: int, end: int, lineno: int, *, final: bool) -> None:
        """Hand the decided events to the sink, then (only then) move the offset."""
        events = parser.take(final=final)
        if events:
            self.stats.turns += self.sink(events)  # raises when refused: counted when it is taken again
            self.stats.messages += sum(len(e.messages) for e in events)
        offset, lines = parser.resume_point() or (end, lineno)
        record.offset, record.lines = offset, lines
        record.mark = mark_at(fd, offset)
        record.parser_state = parser.state()
        self.store.save(record)
        if self.on_progress is not None:
            self.on_progress(self.stats)

    def _save_seen(self, record: FileRecord, status: os.stat_result) -> None:
        record.seen_size, record.seen_mtime = status.st_size, status.st_mtime_ns
        self.store.save(record)

    # -- recognising a file -------------------------------------------------------------------------

    def _recognise(self, path: Path, fd: int, status: os.stat_result) -> FileRecord | None:
        """The file's record: the known one if the checks pass, else a fresh one; None while empty."""
        head = head_of(fd)
        if head is None:
            return None
        known = self.store.get(status.st_dev, status.st_ino)
        if known is not None:
            if head_matches(fd, known) and status.st_size >= known.offset and mark_at(fd, known.offset) == known.mark:
                if known.path != str(path):
                    self._notice(f"{known.path} is now {path}; continuing where it was left")
                    known.path = str(path)
                if known.format == UNKNOWN:
                    self._redetect(path, fd, known)
                return known
            change = "truncated" if status.st_size < known.offset else "rewritten"
            self._notice(f"{path} was {change}; reading it again from the start")
        return self._fresh(path, fd, status, head, known)

    def _fresh(self, path: Path, fd: int, status: os.stat_result, head: bytes, old: FileRecord | None) -> FileRecord:
        digest = head_hash(head)
        fmt: str = self.fmt if self.fmt != "auto" else (detect(_first_lines(fd)) or UNKNOWN)
        same_head = old is not None and old.head_hash == digest
        record = FileRecord(
            dev=status.st_dev,
            ino=status.st_ino,
            path=str(path),
            head_len=len(head),
            head_hash=digest,
            format=fmt,
            scope=_file_scope(path, fmt),
            conversation=old.conversation if same_head and old is not None else _file_conversation(path, fmt, digest),
        )
        self.store.save(record)
        return record

    def _redetect(self, path: Path, fd: int, record: FileRecord) -> None:
        """A file that was no chat log so far: its format now (given, or detected on what it holds
        now); once known, the scope and conversation that format gives (nothing was read yet)."""
        fmt = self.fmt if self.fmt != "auto" else (detect(_first_lines(fd)) or UNKNOWN)
        if fmt == UNKNOWN:
            return
        record.format = fmt
        record.offset, record.lines, record.mark = 0, 0, ""
        record.scope = _file_scope(path, fmt)
        record.conversation = _file_conversation(path, fmt, record.head_hash)

    # -- reporting ----------------------------------------------------------------------------------

    def _unrecognised(self, path: Path) -> None:
        """Record (and report once) a file whose lines say no format."""
        self.stats.unrecognised.add(str(path))
        if str(path) in self._reported_unrecognised:
            return
        self._reported_unrecognised.add(str(path))
        self._notice(
            f"{path}: not a chat log tap recognises (first line: {_snippet(path)}); skipped for now and looked at "
            "again when it grows; to read it anyway, give its format (--format claude-code|jsonl|text, "
            "or [logtail] format)"
        )

    def _seen(self, path: Path, record: FileRecord) -> None:
        self.stats.files.add(str(path))
        self.stats.formats[str(path)] = record.format

    def _skip(self, path: Path, lineno: int, reason: str) -> None:
        self.stats.skipped[reason] += 1
        if len(self.stats.skipped_lines) < KEEP_SKIPPED:
            self.stats.skipped_lines.append(Skipped(str(path), lineno, reason))
        if reason in WARN_REASONS and self.on_warning is not None:
            self.on_warning(f"{path}:{lineno}: {reason}; line skipped")

    def _error(self, path: str, reason: str) -> None:
        if self.stats.errors.get(path) != reason:
            self.stats.errors[path] = reason
            if self.on_error is not None:
                self.on_error(path, reason)

    def _notice(self, text: str) -> None:
        if self.on_warning is not None:
            self.on_warning(text)


def _gone(path: str, dev: int, ino: int) -> bool:
    """The recorded file is no longer at `path`: nothing is there, or another file is."""
    try:
        status = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return True
    except OSError:  # cannot look (permission, I/O error): not known to be gone
        return False
    return (status.st_dev, status.st_ino) != (dev, ino)


def _snippet(path: Path, size: int = 80) -> str:
    """The start of a file's first line, for a message."""
    try:
        with open(path, "rb") as handle:
            line = handle.read(size + 1).split(b"\n", 1)[0]
    except OSError:
        return "unreadable"
    text = line[:size].decode("utf-8", "replace")
    return repr(text + ("…" if len(line) > size else ""))


def _first_lines(fd: int) -> list[bytes]:
    """The complete lines in the first DETECT_BYTES bytes (for detection)."""
    data = os.pread(fd, DETECT_BYTES, 0)
    return data.split(b"\n")[:-1] if b"\n" in data else [data]


def _file_scope(path: Path, fmt: str) -> str:
    """Default scope: a Claude Code project folder's name, else the file's name up to its first dot."""
    if fmt == "claude-code":
        return path.parent.name or "claude-code"
    return path.name.split(".")[0] or path.parent.name or "default"


def _file_conversation(path: Path, fmt: str, digest: str) -> str:
    """Default conversation: the session id for Claude Code, else folder/name plus the head's hash.

    Derived from the name up to its first dot and the first line, so a rotated copy (`chat.log.1`)
    of the same content keeps the conversation and its turn ids (the queue then drops them).
    """
    if fmt == "claude-code":
        return path.stem
    return f"{path.parent.name}/{path.name.split('.')[0]}#{digest[:8]}"
