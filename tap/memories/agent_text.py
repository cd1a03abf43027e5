"""The agent tools' answers as compact text a model reads well (tap.memories.agent).

One memory a line: its full id (what `forget` takes), its date, kind, importance and where it came
from, then the statement; older versions indented under it when asked for. Every answer fits
`Budget` (characters): lines past it are left out and the last line says how many and how to see
them. Memory texts were scrubbed before they were stored; a long one is shortened here.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from tap.plural import plural
from tap.recall.why import WhyRecord
from tap.records import REMEMBERED, Memory

MAX_ANSWER_CHARS = 8000
"""An answer's size budget (about 2,000 tokens): a tool result lands in the agent's context."""
MAX_CONTENT_CHARS = 600
MAX_WHY_CANDIDATES = 20


def day(memory: Memory) -> str:
    """The memory's date (when it was true, else when it was stored), YYYY-MM-DD."""
    return time.strftime("%Y-%m-%d", time.localtime(memory.valid_from or memory.created_at))


def shortened(text: str, limit: int = MAX_CONTENT_CHARS) -> str:
    """One line of at most `limit` characters."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def origin(memory: Memory) -> str:
    """Where a memory came from: its way in, and its conversation when it has one."""
    if memory.conversation == REMEMBERED:
        return f"remembered via {memory.source}"
    return f"via {memory.source}" + (f", conversation {memory.conversation}" if memory.conversation else "")


def memory_line(memory: Memory) -> str:
    """`[id] date · kind · importance N · origin: statement` (+ the conflicts it is part of)."""
    kind = "excerpt" if memory.kind == "episode" else memory.kind
    parts = [f"[{memory.id}] {day(memory)}", kind, f"importance {memory.importance}", origin(memory)]
    line = " · ".join(parts) + ": " + shortened(memory.content)
    if memory.conflicts_with:
        line += f" (contradicts {', '.join(f'[{i}]' for i in memory.conflicts_with)}; both kept until settled)"
    return line


def version_line(memory: Memory) -> str:
    """An older version, indented under the memory that replaced it."""
    return f"    earlier [{memory.id}] {day(memory)}: {shortened(memory.content)}"


class Budget:
    """Lines of one answer within a character budget; the rest counted, then named in one line."""

    def __init__(self, limit: int = MAX_ANSWER_CHARS) -> None:
        self.limit = limit
        self.lines: list[str] = []
        self.size = 0
        self.left_out = 0

    def add(self, *lines: str) -> bool:
        """Add lines that belong together (all or none); False once the budget is spent."""
        size = sum(len(line) + 1 for line in lines)
        if self.left_out or self.size + size > self.limit:
            self.left_out += 1
            return False
        self.lines.extend(lines)
        self.size += size
        return True

    def text(self, hint: str) -> str:
        """The answer; `hint` says how to see what did not fit."""
        if self.left_out:
            self.lines.append(f"… {plural(self.left_out, 'more result')} left out to keep this answer short; {hint}")
        return "\n".join(self.lines)


def memories_text(
    header: str,
    found: Sequence[Memory],
    history: dict[str, list[Memory]] | None = None,
    *,
    limit: int = MAX_ANSWER_CHARS,
) -> str:
    """A header, then each memory (with its older versions from `history`, oldest last)."""
    budget = Budget(limit)
    budget.add(header)
    for memory in found:
        earlier = [version_line(m) for m in (history or {}).get(memory.id, [])]
        budget.add(memory_line(memory), *earlier)
    return budget.text("ask for fewer (limit) or narrow the query")


def why_text(record: WhyRecord, *, limit: int = MAX_ANSWER_CHARS) -> str:
    """What recall did for one request: its query, the outcome, and the candidates with their fate."""
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(record.at))
    head = f"Request {record.request_id} ({record.method} {record.path}, {when}, scope {record.scope})"
    if record.conversation:
        head += f", conversation {record.conversation}"
    lines = [head + ":", f"query: {shortened(record.query) or '(none)'}"]
    outcome = f"injected {plural(record.injected, 'memory', 'memories')}, recall {record.recall_ms:.1f} ms"
    if record.degraded:
        outcome += f"; degraded: {record.degraded} (the request went out without memories)"
    if record.reused_from:
        outcome += f"; reused the block recalled for {record.reused_from}"
    lines.append(outcome)
    budget = Budget(limit)
    budget.add(*lines)
    for candidate in record.candidates[:MAX_WHY_CANDIDATES]:
        scores = [f"score {candidate.score:.4f}"]
        if candidate.vector is not None:
            scores.append(f"cosine {candidate.vector:.3f}")
        if candidate.lexical is not None:
            scores.append(f"bm25 {candidate.lexical:.2f}")
        budget.add(f"- {candidate.outcome} [{candidate.id}] ({', '.join(scores)}): {shortened(candidate.content)}")
    if not record.candidates:
        budget.add("no candidates were recorded (nothing relevant was found, or recall did not run)")
    return budget.text("the full record is `tap why " + record.request_id + " --json`")
