"""AgentMemory: the operations an agent calls as tools (bridges.mcp: `search_memories`, `remember`,
`forget`, `recent_memories`, `why`), each answering in compact text (tap.memories.agent_text).

Scope: every call names the one scope it runs in (the agent's project: the caller decides); a
memory or a `tap why` record of another scope is unknown here, never shown, never forgotten.

- search: hybrid-ranked current memories (statements and verbatim excerpts), optionally one kind,
  optionally each with the older versions it replaced;
- remember: one statement through extraction's reconcile (tap.extract.remember): an update
  supersedes, a restatement adds nothing;
- forget: by id at once (an id comes from an earlier answer: the agent means that memory); by query
  in two steps, so no search an agent runs can forget anything by accident: the first call only
  lists what would go and a confirmation token (`Confirmations`: for this scope and exactly those
  memories, single use, CONFIRM_TTL_S), the second call with that token forgets them. Forgetting
  removes every version and the memory's source turns (tap.memories.service.forget_memory);
- recent: the newest current statements;
- why: what recall did for the last request of the scope, or for one request id (records live in
  `tap serve`'s memory only: without a WhyLog it says so).
Bad input raises ToolInputError with a message for the model; store failures raise tap's own
errors (tap.errors.StoreError …), which the caller reports the same way.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tap.memories.agent_text import MAX_ANSWER_CHARS, day, memories_text, shortened, why_text
from tap.plural import plural
from tap.recall.why import WhyLog, WhyRecord
from tap.records import KINDS, Kind, Memory

if TYPE_CHECKING:  # the store and extraction: a `tap mcp` that relays to a server never loads them
    from tap.extract.remember import Remembered
    from tap.memories.service import MemoryService

CONFIRM_TTL_S = 600.0
MAX_CONFIRMATIONS = 256
MAX_LIMIT = 50
MAX_QUERY_CHARS = 2000
FORGET_CANDIDATES = 10
KIND_FETCH = 5  # a kind filter reads this many times the limit, then keeps the kind's

DEFAULT_AGENT_SCOPE = "default"
caller_scope: ContextVar[str] = ContextVar("tap_agent_scope", default=DEFAULT_AGENT_SCOPE)
"""The scope of the agent calling, where a transport serves many (tap serve's `/mcp`: per request)."""

RememberFn = Callable[..., "Remembered"]
"""`(scope=, text=, kind=, importance=) -> Remembered` (tap.extract.remember.remember, bound to an Extraction)."""


class ToolInputError(ValueError):
    """A call an agent made wrongly (the message says how to make it right)."""


@dataclass(frozen=True)
class _Pending:
    scope: str
    ids: tuple[str, ...]
    expires: float


class Confirmations:
    """Tokens that confirm a forget by query: one scope, the listed memories, once, for a while."""

    def __init__(self, *, ttl_s: float = CONFIRM_TTL_S, now: Callable[[], float] = time.monotonic) -> None:
        self.ttl_s = ttl_s
        self._now = now
        self._pending: OrderedDict[str, _Pending] = OrderedDict()
        self._lock = threading.Lock()

    def issue(self, scope: str, ids: tuple[str, ...]) -> str:
        """A new token for forgetting exactly `ids` in `scope`."""
        token = "forget-" + secrets.token_urlsafe(9)
        with self._lock:
            self._pending[token] = _Pending(scope, ids, self._now() + self.ttl_s)
            while len(self._pending) > MAX_CONFIRMATIONS:
                self._pending.popitem(last=False)
        return token

    def take(self, token: str, scope: str) -> tuple[str, ...]:
        """The ids a token confirms (it is used up); ToolInputError when unknown, used or expired."""
        with self._lock:
            pending = self._pending.get(token.strip())
            if pending is None or pending.scope != scope or pending.expires < self._now():
                raise ToolInputError(
                    "that confirmation token is unknown, already used or expired (they last "
                    f"{CONFIRM_TTL_S / 60:.0f} minutes); call forget with the query again for a new one"
                )
            del self._pending[token.strip()]
        return pending.ids


def _limit(value: int) -> int:
    if not 1 <= value <= MAX_LIMIT:
        raise ToolInputError(f"limit must be from 1 to {MAX_LIMIT}, got {value}")
    return value


def _kind(value: str | None) -> Kind | None:
    if value is None or value == "":
        return None
    if value not in KINDS:
        raise ToolInputError(f"kind must be one of {', '.join(KINDS)}; got {value!r}")
    return value  # type: ignore[return-value]  # checked against KINDS just above


def _query(value: str) -> str:
    text = " ".join(value.split())
    if not text:
        raise ToolInputError("query is empty; say what to look for")
    if len(text) > MAX_QUERY_CHARS:
        raise ToolInputError(f"query is {len(text)} characters; at most {MAX_QUERY_CHARS}")
    return text


class AgentMemory:
    """The agent tools' operations over one memory service (see the module docstring)."""

    def __init__(
        self,
        memories: MemoryService,
        remember: RememberFn,
        confirmations: Confirmations,
        *,
        why: WhyLog | None = None,
        max_chars: int = MAX_ANSWER_CHARS,
    ) -> None:
        self.memories = memories
        self._remember = remember
        self.confirmations = confirmations
        self.why_log = why
        self.max_chars = max_chars

    def search(
        self, scope: str, query: str, *, limit: int = 10, kind: str | None = None, include_history: bool = False
    ) -> str:
        """The current memories that best match `query`, best first."""
        text, wanted, count = _query(query), _kind(kind), _limit(limit)
        found = self.memories.search(text, scope=scope, limit=count * KIND_FETCH if wanted else count)
        if wanted:
            found = [(m, s) for m, s in found if m.kind == wanted][:count]
        what = f"{wanted} memories" if wanted else "memories"
        if not found:
            hint = "`remember` saves one; `recent_memories` lists the newest"
            return f"No {what} match {text!r} in scope {scope} ({hint})."
        history = {m.id: self._older(m) for m, _ in found} if include_history else None
        header = f"{plural(len(found), what[:-3] + 'y', what)} for {text!r} in scope {scope}, best first:"
        return memories_text(header, [m for m, _ in found], history, limit=self.max_chars)

    def _older(self, memory: Memory) -> list[Memory]:
        """The versions a memory replaced, newest first."""
        chain = self.memories.chain(memory.id)
        return [m for m in reversed(chain) if m.id != memory.id and not m.current]

    def recent(self, scope: str, *, limit: int = 10, kind: str | None = None) -> str:
        """The newest current statements of the scope."""
        wanted, count = _kind(kind), _limit(limit)
        fetch = count * KIND_FETCH if wanted else count
        found = self.memories.list_memories(scope=scope, limit=fetch, excerpts=wanted == "episode", archived=False)
        if wanted:
            found = [m for m in found if m.kind == wanted][:count]
        if not found:
            return f"No {'memories' if not wanted else wanted + ' memories'} in scope {scope} yet."
        header = f"The {plural(len(found), 'newest memory', 'newest memories')} in scope {scope}:"
        return memories_text(header, found, limit=self.max_chars)

    def remember(self, scope: str, text: str, *, kind: str | None = None, importance: int | None = None) -> str:
        """Store one statement through reconcile and say what became of it."""
        if importance is not None and not 1 <= importance <= 5:
            raise ToolInputError(f"importance must be from 1 (trivia) to 5 (essential), got {importance}")
        try:
            done = self._remember(scope=scope, text=text, kind=_kind(kind), importance=importance)
        except ToolInputError:
            raise
        except ValueError as exc:
            raise ToolInputError(str(exc)) from None
        return remembered_text(done)

    def forget(self, scope: str, *, id: str | None = None, query: str | None = None, confirm: str | None = None) -> str:
        """Forget one memory by id, or list a query's memories with a token, or forget what a token confirms."""
        given = [name for name, value in (("id", id), ("query", query), ("confirm", confirm)) if value]
        if len(given) != 1:
            raise ToolInputError(
                "give exactly one of: id (forget that memory), query (list what would be forgotten and get "
                f"a confirmation token), confirm (the token); got {' and '.join(given) or 'none'}"
            )
        if id:
            return self._forget_ids(scope, (id.strip(),), strict=True)
        if confirm:
            return self._forget_ids(scope, self.confirmations.take(confirm, scope), strict=False)
        text = _query(query or "")
        found = self.memories.search(text, scope=scope, limit=FORGET_CANDIDATES)
        if not found:
            return f"No memories match {text!r} in scope {scope}; nothing would be forgotten."
        token = self.confirmations.issue(scope, tuple(m.id for m, _ in found))
        header = (
            f"Nothing is forgotten yet: {plural(len(found), 'memory matches', 'memories match')} {text!r} in scope "
            f"{scope}. To forget all of them, call forget with confirm={token!r} (once, within "
            f"{CONFIRM_TTL_S / 60:.0f} minutes); to forget only some, call forget with their id."
        )
        return memories_text(header, [m for m, _ in found], limit=self.max_chars)

    def _forget_ids(self, scope: str, ids: tuple[str, ...], *, strict: bool) -> str:
        lines = []
        for memory_id in ids:
            memory = self.memories.get(memory_id)
            if memory is None or memory.scope != scope:
                if strict:
                    raise ToolInputError(f"no memory {memory_id!r} in scope {scope} (ids look like m_…, from a search)")
                lines.append(f"[{memory_id}] was already gone")
                continue
            gone = self.memories.forget_memory(memory_id)
            extra = len(gone.deleted) - 1
            line = f"Forgot [{memory_id}] {day(memory)}: {shortened(memory.content, 200)}"
            if extra > 0:
                line += f" (and {plural(extra, 'other version')})"
            if gone.excerpts:
                line += f"; {plural(len(gone.excerpts), 'excerpt')} of its source turns went with it"
            lines.append(line)
        return "\n".join(lines)

    def why(self, scope: str, request_id: str | None = None) -> str:
        """What recall did for the scope's last request, or for one request id."""
        if self.why_log is None:
            raise ToolInputError("`why` needs `tap serve` running: its recall records live in the server's memory only")
        record: WhyRecord | None
        if request_id:
            record = self.why_log.get(request_id.strip())
            if record is None or record.scope != scope:
                raise ToolInputError(
                    f"no record of request {request_id!r} in scope {scope} (records last "
                    f"{self.why_log.config.keep_minutes:g} minutes; ids come from x-tap-request-id)"
                )
        else:
            record = next((r for r in self.why_log.recent(self.why_log.config.keep) if r.scope == scope), None)
            if record is None:
                return (
                    f"No recall records for scope {scope} yet (they last {self.why_log.config.keep_minutes:g} minutes)."
                )
        return why_text(record, limit=self.max_chars)


def remembered_text(done: Remembered) -> str:
    """What `remember` did, in one or two lines."""
    memory, related = done.memory, done.related
    if done.action == "drop" or memory is None:
        return "Nothing remembered: it corrects a statement this scope does not hold."
    said = f"[{memory.id}] {day(memory)}: {shortened(memory.content, 300)}"
    others = "; ".join(f"[{m.id}] {day(m)}: {shortened(m.content, 200)}" for m in related)
    match done.action:
        case "noop":
            return f"Already remembered as {said}"
        case "update" | "supersede":
            return f"Remembered {said}\nIt replaces {others} (kept as history, no longer recalled)."
        case "conflict":
            return f"Remembered {said}\nIt contradicts {others}; both are kept until the user settles it."
        case "history":
            return f"Remembered {said} as history: a newer statement says {others}."
        case _:
            return f"Remembered {said}"
