"""Why was this injected? One id, one log line and a short-lived record of the recall per request.

Every request the interception core sees gets a `RequestNote`: an id (`x-tap-request-id`) and,
when the request is over (`Interceptor.finish`), one line on the `tap.requests` logger:

    request r_5f0c… POST /v1/messages scope=default conversation=c_… injected=3 recall_ms=12.4
    degraded=- status=200 duration_ms=812.0

and a `WhyRecord` kept in the server's memory (`WhyLog`, never on disk): the query, and the
candidates with their vector, lexical, recency and importance scores, final score and fate
(`injected`; `over-budget`: no room left for it in the block; `repeat`: its line would say what a
line in the block says already; `visible`, `below-threshold`; `superseded` / `archived` looked up
when the record is viewed, never on the hot path). A step that reused its human turn's block names
the request that recalled it (`reused_from`).

Bounds and privacy: at most `[why] keep` records, each for at most `keep_minutes`, with at most
`candidates` candidates (every injected one first); the query is scrubbed before any record is
shown; forgetting a scope drops its records, and forgetting a memory takes its text out of every
record and keeps the rest (the candidate, and a query that was one of its source turns, show
"forgotten").

Cost is paid on reading: the recall thread only hands the trace what it found and packed, keeping
a request is storing its note on the event loop, and candidates are weighed, sorted and the query
scrubbed the first time the record is read. Without a WhyLog (or `keep = 0`) recall does no extra work.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from tap.config import WhyConfig
from tap.recall.query import reduce_query
from tap.records import Hit, Memory, RecallResult
from tap.scrub import scrub

request_log = logging.getLogger("tap.requests")
REQUEST_ID_HEADER = "x-tap-request-id"
MAX_CONTENT = 400
MAX_QUERY = 2000
FORGOTTEN = "forgotten"
"""What a record shows in place of a forgotten memory's text (and of a query that was its turn)."""
Outcome = Literal[
    "injected", "below-threshold", "over-budget", "repeat", "superseded", "visible", "archived", "skipped"
]
_ORDER = {"injected": 0, "over-budget": 1, "repeat": 1, "visible": 2, "skipped": 2, "below-threshold": 3}


def new_request_id() -> str:
    """A fresh request id: short, url-safe."""
    return "r_" + uuid.uuid4().hex[:16]


@dataclass
class _Record:
    memory: Memory
    vector: float | None = None
    lexical: float | None = None
    recency: float = 0.0
    importance: float = 0.0
    score: float = 0.0
    outcome: str = "below-threshold"


class _Found(msgspec.Struct, array_like=True, gc=False):
    """A trace's candidates, as another process sends them (SentTrace)."""

    vector_hits: list[Hit]
    lexical_hits: list[Hit]
    scored: list[tuple[Memory, float]]
    ranked: list[tuple[Memory, float]]


_encode_found = msgspec.json.Encoder().encode
_decode_found = msgspec.json.Decoder(_Found).decode


class SentTrace(msgspec.Struct, frozen=True):
    """A trace filled in the recall process (tap.wiring.recall_process), on its way back: what the
    request's record reads at once, and the candidates encoded, decoded when `tap why` first reads
    them (most records are never read; decoding a few hundred memories per request would put back
    on tap serve's interpreter lock part of the work the recall process takes off it)."""

    query: str
    vector: list[float]
    found: bytes
    injected: list[str]
    left_out: dict[str, str] = {}


class RecallTrace:
    """What one recall did with each candidate (tap.recall.engine calls `retrieved`, then `packed`).

    Both calls only keep what they are given (the hits, the scores, the block's ids): the entries
    are built, weighed and sorted in `candidates`, when the record is first read (WhyLog), off the
    recall's path.
    """

    def __init__(self, skip_outcome: str = "visible") -> None:
        self.skip_outcome = skip_outcome
        self.query = ""
        self.vector: list[float] = []
        self._vector_hits: Sequence[Hit] = ()
        self._lexical_hits: Sequence[Hit] = ()
        self._scored: Sequence[tuple[Memory, float]] = ()
        self._weights: Callable[[Memory], tuple[float, float]] | None = None
        self._ranked: Sequence[tuple[Memory, float]] = ()
        self._injected: frozenset[str] = frozenset()
        self._left_out: dict[str, str] = {}  # why the packer left a ranked memory out, by id
        self._sent: bytes | None = None  # candidates from the recall process, not decoded yet

    def to_send(self) -> SentTrace:
        """This trace, filled in the recall process, for the process that asked (`take`)."""
        found = _Found(list(self._vector_hits), list(self._lexical_hits), list(self._scored), list(self._ranked))
        return SentTrace(self.query, self.vector, _encode_found(found), sorted(self._injected), self._left_out)

    def take(self, sent: SentTrace, weights: Callable[[Memory], tuple[float, float]]) -> None:
        """Hold what the recall process found for this request (see SentTrace)."""
        self.query, self.vector, self._weights = sent.query, sent.vector, weights
        self._sent, self._injected, self._left_out = sent.found, frozenset(sent.injected), sent.left_out

    def retrieved(
        self,
        query: str,
        vector: Sequence[float],
        vector_hits: Sequence[Hit],
        lexical_hits: Sequence[Hit],
        scored: Sequence[tuple[Memory, float]],
        weights: Callable[[Memory], tuple[float, float]],
    ) -> None:
        """Both retrievers' raw hits and the relevant candidates' final scores (before any skip)."""
        self.query, self.vector, self._weights = query, list(vector), weights
        self._vector_hits, self._lexical_hits, self._scored = vector_hits, lexical_hits, scored

    def packed(
        self, ranked: Sequence[tuple[Memory, float]], result: RecallResult, left_out: dict[str, str] | None = None
    ) -> None:
        """The ranking that was packed (skips applied, conflict partners added), the block, and why
        the packer left each of the others out (tap.recall.engine.pack: OVER_BUDGET, REPEAT)."""
        self._ranked = ranked
        self._injected = frozenset(r.memory.id for r in result.memories)
        self._left_out = left_out or {}

    def _entries(self) -> list[_Record]:
        """Every candidate with its scores and fate, from what `retrieved` and `packed` kept."""
        entries: dict[str, _Record] = {}
        if self._sent is not None:
            sent, self._sent = _decode_found(self._sent), None
            self._vector_hits, self._lexical_hits = sent.vector_hits, sent.lexical_hits
            self._scored, self._ranked = sent.scored, sent.ranked

        def entry(memory: Memory) -> _Record:
            found = entries.get(memory.id)
            if found is None:
                found = entries[memory.id] = _Record(memory)
            return found

        for hit in self._vector_hits:
            entry(hit.memory).vector = round(hit.score, 4)
        for hit in self._lexical_hits:
            entry(hit.memory).lexical = round(hit.score, 4)
        relevant = {m.id: s for m, s in self._scored}
        for found in entries.values():
            if self._weights is not None:
                found.recency, found.importance = (round(w, 4) for w in self._weights(found.memory))
            if found.memory.id in relevant:
                found.score = round(relevant[found.memory.id], 6)
                found.outcome = self.skip_outcome  # until the packed ranking shows it
        for memory, score in self._ranked:
            new = memory.id not in entries
            found = entry(memory)
            if new and self._weights is not None:  # a conflict partner the search did not find
                found.recency, found.importance = (round(w, 4) for w in self._weights(memory))
            found.score = found.score or round(score, 6)
            found.outcome = "injected" if memory.id in self._injected else self._left_out.get(memory.id, "over-budget")
        return list(entries.values())

    def candidates(self, limit: int) -> list[Candidate]:
        """At most `limit` candidates, scrubbed: injected first, then by score and similarity."""
        entries = sorted(
            self._entries(),
            key=lambda e: (_ORDER.get(e.outcome, 4), -e.score, -(e.vector or 0.0), -(e.lexical or 0.0), e.memory.id),
        )
        return [
            candidate(e.memory, e.vector, e.lexical, e.recency, e.importance, e.score, e.outcome)
            for e in entries[:limit]
        ]


class Candidate(msgspec.Struct, kw_only=True):
    """One memory recall looked at, its scores and its fate."""

    id: str
    content: str
    kind: str
    vector: float | None
    lexical: float | None
    recency: float
    importance: float
    score: float
    outcome: str


def candidate(
    memory: Memory,
    vector: float | None,
    lexical: float | None,
    recency: float,
    importance: float,
    score: float,
    outcome: str,
) -> Candidate:
    """A candidate with its content shortened (memories are scrubbed before they are stored)."""
    content = memory.content
    if len(content) > MAX_CONTENT:
        content = content[: MAX_CONTENT - 1] + "…"
    return Candidate(
        id=memory.id,
        content=content,
        kind=memory.kind,
        vector=vector,
        lexical=lexical,
        recency=recency,
        importance=importance,
        score=score,
        outcome=outcome,
    )


@dataclass
class RequestNote:
    """One request as the interception core saw it, until `Interceptor.finish` logs and keeps it."""

    request_id: str
    method: str = "POST"
    path: str = ""
    at: float = field(default_factory=time.time)
    started: float = field(default_factory=time.perf_counter)
    scope: str = ""
    conversation: str = ""
    injected: int = 0
    recall_ms: float | None = None
    degraded: str = ""
    trace: RecallTrace | None = None
    reused_from: str = ""
    keep: bool = True
    finished: bool = False


class WhyRecord(msgspec.Struct, kw_only=True):
    """The kept record of one request (the JSON of `GET /tap/why/{id}`, less `vector`)."""

    request_id: str
    at: float
    method: str
    path: str
    scope: str
    conversation: str
    query: str
    injected: int
    recall_ms: float
    degraded: str
    upstream_status: int
    duration_ms: float
    reused_from: str = ""
    candidates: list[Candidate] = msgspec.field(default_factory=list)
    vector: list[float] = msgspec.field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """The short form of `GET /tap/why`."""
        return {
            "request_id": self.request_id,
            "at": self.at,
            "method": self.method,
            "path": self.path,
            "scope": self.scope,
            "conversation": self.conversation,
            "injected": self.injected,
            "recall_ms": self.recall_ms,
            "degraded": self.degraded,
        }

    def view(self) -> dict[str, Any]:
        """The whole record as JSON (without the query's vector)."""
        out: dict[str, Any] = msgspec.to_builtins(self)
        out.pop("vector", None)
        return out


def log_line(note: RequestNote, status: int, duration_ms: float) -> str:
    """The one line a request leaves in the log (values with spaces quoted)."""
    fields = {
        "scope": note.scope or "-",
        "conversation": note.conversation or "-",
        "injected": str(note.injected),
        "recall_ms": "-" if note.recall_ms is None else f"{note.recall_ms:.1f}",
        "degraded": note.degraded or "-",
        "status": str(status),
        "duration_ms": f"{duration_ms:.1f}",
    }
    if note.reused_from:
        fields["reused_from"] = note.reused_from
    pairs = " ".join(f"{k}={_quoted(v)}" for k, v in fields.items())
    return f"request {note.request_id} {note.method} {_quoted(note.path or '-')} {pairs}"


def _quoted(value: str) -> str:
    return msgspec.json.encode(value).decode() if not value or any(c in value for c in ' "=\n\t') else value


@dataclass(slots=True)
class _Kept:
    """A request as kept: its note until the record is first read, then the record."""

    note: RequestNote
    status: int
    duration_ms: float
    original: _Kept | None = None
    """The request whose block this one reused (`reused_from`), held from the start: it may be
    pruned before this record is read."""
    built: WhyRecord | None = None

    @property
    def at(self) -> float:
        return self.note.at

    @property
    def scope(self) -> str:
        return self.note.scope


class WhyLog:
    """The kept records, newest last, bounded by count and age (thread-safe). A record is built
    the first time it is read (see the module docstring)."""

    name = "recall records (tap why)"

    def __init__(self, config: WhyConfig, *, now: Callable[[], float] = time.time) -> None:
        self.config = config
        self._now = now
        self._records: OrderedDict[str, _Kept] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        """Whether records are kept at all (`[why] keep > 0`)."""
        return self.config.keep > 0

    def record(self, note: RequestNote, status: int, duration_ms: float) -> None:
        """Keep the request (its record is made when first read)."""
        with self._lock:
            original = self._records.get(note.reused_from) if note.reused_from else None
            self._records[note.request_id] = _Kept(note, status, duration_ms, original)
            self._prune()

    def _built(self, kept: _Kept) -> WhyRecord:
        """The request's record, scrubbed and bounded, made once. Called without the lock: `record`
        takes it on the event loop, and building 200 records takes a while (two threads building
        the same one at once make equal records)."""
        if kept.built is not None:
            return kept.built
        note, trace = kept.note, kept.note.trace
        candidates = trace.candidates(self.config.candidates) if trace is not None else []
        if not candidates and kept.original is not None:
            candidates = list(self._built(kept.original).candidates)
        kept.built = WhyRecord(
            request_id=note.request_id,
            at=note.at,
            method=note.method,
            path=note.path,
            scope=note.scope,
            conversation=note.conversation,
            query=scrub(trace.query)[:MAX_QUERY] if trace is not None else "",
            injected=note.injected,
            recall_ms=round(note.recall_ms or 0.0, 3),
            degraded=note.degraded,
            upstream_status=kept.status,
            duration_ms=round(kept.duration_ms, 3),
            reused_from=note.reused_from,
            candidates=candidates,
            vector=trace.vector if trace is not None else [],
        )
        return kept.built

    def _prune(self) -> None:
        oldest = self._now() - self.config.keep_minutes * 60
        while self._records and (
            len(self._records) > self.config.keep or next(iter(self._records.values())).at < oldest
        ):
            self._records.popitem(last=False)

    def get(self, request_id: str) -> WhyRecord | None:
        """One record, unless unknown or expired."""
        with self._lock:
            self._prune()
            kept = self._records.get(request_id)
        return None if kept is None else self._built(kept)

    def last(self) -> WhyRecord | None:
        """The newest record."""
        with self._lock:
            self._prune()
            kept = next(reversed(self._records.values()), None)
        return None if kept is None else self._built(kept)

    def recent(self, limit: int) -> list[WhyRecord]:
        """The newest records, newest first."""
        with self._lock:
            self._prune()
            newest = list(reversed(self._records.values()))[:limit]
        return [self._built(kept) for kept in newest]

    def forget_scope(self, scope: str) -> int:
        """Drop the records of a scope (tap.memories.service.ScopeHolder)."""
        with self._lock:
            doomed = [i for i, kept in self._records.items() if kept.scope == scope]
            for request_id in doomed:
                del self._records[request_id]
        return len(doomed)

    def forget_memories(self, ids: Sequence[str], texts: Sequence[str] = ()) -> int:
        """Take these memories out of every record, keeping the rest of it: each shows as FORGOTTEN
        in its candidates, and a query that was one of `texts` (what was forgotten: the memories'
        contents and their source turns) is FORGOTTEN too. Returns how many records changed."""
        gone, said = set(ids), {_as_query(t) for t in texts} - {""}
        with self._lock:
            kept_now = list(self._records.values())
        changed = 0
        for kept in kept_now:  # oldest first: a request's original is done before the one reusing it
            record = self._built(kept)
            kept.note.trace = None  # built: the memories it held are not needed (nor kept) any more
            candidates = [
                msgspec.structs.replace(c, content=FORGOTTEN) if c.id in gone and c.content != FORGOTTEN else c
                for c in record.candidates
            ]
            query_gone = record.query != FORGOTTEN and record.query in said
            if query_gone:
                record.query, record.vector = FORGOTTEN, []
            if query_gone or candidates != record.candidates:
                record.candidates = candidates
                changed += 1
        return changed


def _as_query(text: str) -> str:
    """The query a record shows for a turn of this text (how a forgotten turn is recognised)."""
    return scrub(reduce_query(text).lexical)[:MAX_QUERY]


def explain(
    record: WhyRecord,
    search: Callable[[Sequence[float], str, int], list[Hit]],
    weights: Callable[[Memory], tuple[float, float]],
    *,
    min_similarity: float,
    k: int = 5,
) -> dict[str, Any]:
    """The record's view with the superseded and archived memories that would have matched the
    query (`search`: the store's search over them, given the query's vector), each with why it was
    not used. Runs off the hot path, when someone asks."""
    view = record.view()
    if record.vector and record.scope:
        shown = {c["id"] for c in view["candidates"]}
        for hit in search(record.vector, record.scope, k):
            if hit.score < min_similarity or hit.memory.id in shown:
                continue
            recency, importance = weights(hit.memory)
            outcome = "superseded" if not hit.memory.current else "archived"
            extra = candidate(
                hit.memory, round(hit.score, 4), None, round(recency, 4), round(importance, 4), 0.0, outcome
            )
            view["candidates"].append({**msgspec.to_builtins(extra), "superseded_by": hit.memory.superseded_by})
    return view
