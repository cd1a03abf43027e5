"""Claude Code session transcripts (`~/.claude/projects/<project>/<session>.jsonl`) → IngestEvents.

The conversation is rebuilt as Claude Code's own reader does (docs/protocols.md, Claude Code
transcripts): entries link by `uuid`/`parentUuid`, and the conversation is the chain from the
newest visible leaf back to the root. Only user and assistant text is kept (tool results and use,
thinking, images, meta lines, sidechains, team messages, synthetic API errors and command noise
are dropped); the lines of one assistant message (one content block a line, one `message.id`) are
one turn, whose id is its first line's uuid. Scope: the project of the session's working
directory (tap.intercept.projects) unless configured; conversation: `sessionId`.

Streaming, in bounded memory: between checkpoints the parser indexes only the entries read since
the last one (uuid → parent, the visible text). At a checkpoint (end of a pass, or when the index
passes `max_nodes` entries or `max_text` bytes, at the next user entry) it walks from the newest
leaf up the chain until it leaves the index, emits the visible turns on the walk and forgets the
index. The rule, across restarts too (the offset is committed after a checkpoint): *an entry is
emitted iff it lies on the chain of the newest leaf at the first checkpoint after it was written*.
So:
- a branch abandoned within one interval (an edited prompt) is dropped; one already emitted stays;
- while a file is being written, a conversation ending in an assistant line is held back (kept in
  the index, resume point before it) and emitted whole at a later checkpoint, or dropped if its
  prompt was edited meanwhile;
- compaction: a `compact_boundary` starts a new root; the walk follows its `logicalParentUuid`, so
  the conversation before it is kept; the compact summary is dropped when the file already had
  visible turns, else kept as an assistant turn.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import msgspec

from bridges.logtail.formats import (
    FileContext,
    decode_line,
    events_by_conversation,
    fit_scope,
    parse_timestamp,
)
from bridges.logtail.lines import LogLine
from tap.intercept.projects import project_scope
from tap.records import IngestEvent, Message

__all__ = ["ClaudeCodeParser", "clean_user_text"]

MAX_NODES = 50_000
MAX_TEXT = 16 << 20
MAX_SCOPES_KEPT = 64

_NOISE_TAGS = (
    "command-name|command-message|command-args|command-contents|local-command-stdout|local-command-stderr|"
    "local-command-caveat|system-reminder|ide_opened_file|ide_selection|ide_diagnostics|session-start-hook|"
    "user-prompt-submit-hook|bash-input|bash-stdout|bash-stderr|tick|goal"
)
_NOISE_SPAN = re.compile(rf"<({_NOISE_TAGS})>.*?</\1>", re.DOTALL)
_NOISE_OPEN = re.compile(rf"<({_NOISE_TAGS})>.*", re.DOTALL)  # an unclosed noise tag runs to the end
_INTERRUPTED = re.compile(r"\[Request interrupted by user[^\]]*\]")


class _ContentBlock(msgspec.Struct):
    """A content block; only text blocks are read, the rest (tool_result, …) is skipped unparsed."""

    type: str = ""
    text: str | None = None


class _Message(msgspec.Struct):
    id: str | None = None
    role: str | None = None
    model: str | None = None
    content: str | list[_ContentBlock | str] | None = None


class _TranscriptEntry(msgspec.Struct, rename="camel"):
    """The fields of a transcript line that matter here (tolerant: unknown fields are skipped)."""

    type: str | None = None
    uuid: str | None = None
    parent_uuid: str | None = None
    logical_parent_uuid: str | None = None
    session_id: str | None = None
    timestamp: str | None = None
    cwd: str | None = None
    is_sidechain: bool | None = None
    is_meta: bool | None = None
    is_compact_summary: bool | None = None
    is_api_error_message: bool | None = None
    team_name: str | None = None
    subtype: str | None = None
    message: _Message | str | None = None


_DECODER = msgspec.json.Decoder(_TranscriptEntry)


@dataclass(slots=True)
class _Turn:
    role: str
    text: str
    message_id: str
    session: str
    timestamp: float


@dataclass(slots=True)
class _Node:
    parent: str | None
    turn: _Turn | None
    start: int  # byte offset and number of the entry's line, for resuming before it
    lineno: int


def clean_user_text(text: str) -> str:
    """User text without Claude Code's command/IDE/hook noise; empty when nothing else is left."""
    if "<" in text:
        text = _NOISE_OPEN.sub("", _NOISE_SPAN.sub("", text))
    if "[Request interrupted" in text:
        text = _INTERRUPTED.sub("", text)
    return text.strip()


def _texts(content: str | list[_ContentBlock | str] | None) -> tuple[list[str], bool]:
    """The text blocks of a message, and whether it carries a tool result."""
    if content is None:
        return [], False
    if isinstance(content, str):
        return [content], False
    texts: list[str] = []
    tool_result = False
    for block in content:
        if isinstance(block, str):
            texts.append(block)
        elif block.type == "text" and block.text:
            texts.append(block.text)
        elif block.type == "tool_result":
            tool_result = True
    return texts, tool_result


class ClaudeCodeParser:
    """Incremental conversation rebuild for one session file (see the module docstring)."""

    def __init__(self, ctx: FileContext, *, max_nodes: int = MAX_NODES, max_text: int = MAX_TEXT) -> None:
        self._ctx = ctx
        self._max_nodes = max_nodes
        self._max_text = max_text
        self._nodes: dict[str, _Node] = {}
        self._leaf: str | None = None
        self._leaf_type = ""
        self._held: _Node | None = None
        self._last_type = ""
        self._text_bytes = 0
        saved_scopes = ctx.state.get("scopes")
        self._scopes: dict[str, str] = dict(saved_scopes) if isinstance(saved_scopes, dict) else {}
        self._seen_turns = bool(ctx.state.get("seen_turns", False))

    def feed(self, line: LogLine, lineno: int) -> str | None:
        """Index one transcript line."""
        entry, skipped = decode_line(line, _DECODER)
        if entry is None:
            return skipped
        if not entry.uuid:
            return None  # metadata without a chain link: summary, title, tag, queue-operation, ...
        session = entry.session_id or self._ctx.conversation
        if entry.cwd and session not in self._scopes:  # the project, as the agent hooks file it
            self._scopes[session] = project_scope(entry.cwd)
        parent = entry.parent_uuid
        if entry.type == "system" and entry.subtype == "compact_boundary" and entry.logical_parent_uuid:
            parent = entry.logical_parent_uuid
        turn = self._turn(entry, session)
        self._nodes[entry.uuid] = _Node(parent, turn, line.start, lineno)
        if turn is not None:
            self._seen_turns = True
            self._text_bytes += len(turn.text)
        if entry.type in ("user", "assistant") and not (entry.is_sidechain or entry.is_meta or entry.team_name):
            self._leaf, self._leaf_type = entry.uuid, entry.type
        self._last_type = entry.type or ""
        return None

    def _turn(self, entry: _TranscriptEntry, session: str) -> _Turn | None:
        """The visible text of a user/assistant entry, or None when it shows nothing to remember."""
        message = entry.message
        if entry.type not in ("user", "assistant") or not isinstance(message, _Message):
            return None
        if entry.is_sidechain or entry.is_meta or entry.team_name:
            return None
        texts, tool_result = _texts(message.content)
        role = entry.type
        if role == "assistant":
            if entry.is_api_error_message or message.model == "<synthetic>":
                return None
            text = "\n\n".join(t.strip() for t in texts if t.strip())
        elif tool_result:
            return None
        elif entry.is_compact_summary:
            if self._seen_turns:
                return None  # the turns it summarises are in this file and were ingested themselves
            role, text = "assistant", "\n\n".join(texts).strip()
        else:
            text = "\n\n".join(c for c in (clean_user_text(t) for t in texts) if c)
        if not text:
            return None
        message_id = message.id or entry.uuid or ""
        return _Turn(role, text, message_id, session, parse_timestamp(entry.timestamp))

    def want_checkpoint(self) -> bool:
        """Over the bound, at a user entry (so assistant lines of one message stay together)."""
        over = len(self._nodes) >= self._max_nodes or self._text_bytes >= self._max_text
        far_over = len(self._nodes) >= 4 * self._max_nodes or self._text_bytes >= 4 * self._max_text
        return far_over or (over and self._last_type == "user")

    def take(self, *, final: bool) -> list[IngestEvent]:
        """The visible turns on the chain of the newest leaf; then forget the index.

        Unless `final`, a conversation that ends in an assistant line may still be writing that
        message: its lines are held back (kept in the index, and the resume point goes before them)
        so that the message is merged whole later instead of being cut in two.
        """
        path = self._path()
        held = self._held_back(path) if not final and self._leaf_type == "assistant" else 0
        self._held = self._nodes[path[held - 1]] if held else None
        turns = [(u, self._nodes[u].turn) for u in reversed(path[held:]) if self._nodes[u].turn is not None]
        # keep what a re-read from the resume point would index: every entry from there on
        kept = {u: n for u, n in self._nodes.items() if self._held is not None and n.start >= self._held.start}
        self._nodes = kept
        self._text_bytes = sum(len(n.turn.text) for n in kept.values() if n.turn is not None)
        if not kept:
            self._leaf, self._leaf_type = None, ""
        return events_by_conversation(
            (self._scope(turn.session), turn.session, message)
            for turn, message in _merge([(u, t) for u, t in turns if t is not None])
        )

    def _path(self) -> list[str]:
        """Uuids from the leaf back to the first entry outside the index (leaf first)."""
        path: list[str] = []
        current = self._leaf
        for _ in range(len(self._nodes)):  # bounded: a corrupt file with a cycle cannot loop forever
            if current is None or current not in self._nodes:
                break
            path.append(current)
            current = self._nodes[current].parent
        return path

    def _held_back(self, path: list[str]) -> int:
        """How many entries at the leaf end of the path belong to the last, maybe unfinished, message."""
        last = next((self._nodes[u].turn for u in path if self._nodes[u].turn is not None), None)
        if last is None or last.role != "assistant":
            return 0
        count = 0
        for index, uuid in enumerate(path):
            turn = self._nodes[uuid].turn
            if turn is not None:
                if turn.role != "assistant" or turn.message_id != last.message_id:
                    break
                count = index + 1
        return count

    def _scope(self, session: str) -> str:
        return fit_scope(self._ctx.scope_override or self._scopes.get(session) or self._ctx.scope)

    def resume_point(self) -> tuple[int, int] | None:
        """Before the first line of a held-back message; else None (everything fed is decided)."""
        held = self._held
        return (held.start, held.lineno - 1) if held is not None else None

    def state(self) -> dict[str, Any]:
        """Session scopes (the first cwd of each session) and whether turns were seen."""
        scopes = dict(list(self._scopes.items())[-MAX_SCOPES_KEPT:])
        return {"scopes": scopes, "seen_turns": self._seen_turns}


def _merge(chain: list[tuple[str, _Turn]]) -> list[tuple[_Turn, Message]]:
    """Consecutive assistant lines of one message become one Message (id of the first line)."""
    merged: list[tuple[_Turn, Message]] = []
    for uuid, turn in chain:
        if merged:
            last, message = merged[-1]
            if turn.role == "assistant" == last.role and turn.message_id == last.message_id:
                message.content += "\n\n" + turn.text
                continue
        message = Message(role=turn.role, content=turn.text, id=uuid, timestamp=turn.timestamp)
        merged.append((turn, message))
    return merged
