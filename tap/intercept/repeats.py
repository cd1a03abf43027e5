"""Which recalled memories not to inject again, per way in (docs/architecture.md, Recall: repeats).

Proxy and mitmproxy injection is ephemeral: the client's history never contains tap's block, so
every request gets the block for its latest human turn again, and only memories the model can
already see *in this request* are left out (`VisibleInRequest`):
- a memory whose source turns all belong to this conversation and are all messages of this
  request (turn ids are recomputed from the request: tap.intercept.conversations.request_turn_ids), or
- a memory whose text appears verbatim (case and spacing aside) in the request's text; only the
  newest `MAX_SCANNED_CHARS` characters are searched, so a huge agent context costs a bounded
  amount of the recall deadline.
Both checks are lazy: a request pays for them only when recall found candidates that need them.

Agent-hook injection is different: the context a hook adds is recorded in the transcript and
sent again on later turns, so within one session a memory given once stays visible, until a
compaction or a clear drops that context. `SessionLedger` keeps what each session was given
(bounded), for the hook endpoints to skip; `reset` forgets a session after compaction or clear.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from functools import lru_cache

from tap.intercept.conversations import request_turn_ids
from tap.intercept.dialects.transcript import PlainMessage
from tap.lru import LRU
from tap.records import Memory

MAX_SCANNED_CHARS = 256_000
MAX_SESSIONS = 5_000

Skip = Callable[[Memory], bool]
"""A predicate recall uses to leave a memory out of the block."""


def normalise(text: str) -> str:
    """Case-folded, with every run of whitespace a single space."""
    return " ".join(text.casefold().split())


@lru_cache(maxsize=16384)
def _needle(content: str) -> str:
    """A memory's text as `_quoted` looks for it (the same memories come back request after request)."""
    return normalise(content)


class VisibleInRequest:
    """True for a memory the model can already see in one request (see the module docstring)."""

    def __init__(
        self,
        conversation: str,
        said: Sequence[PlainMessage],
        system: str = "",
        *,
        turn_ids: Collection[str] | None = None,
    ) -> None:
        self.conversation = conversation
        self._said = said
        self._system = system
        self._turn_ids: Collection[str] | None = turn_ids
        self._haystack: str | None = None

    def __call__(self, memory: Memory) -> bool:
        """Whether `memory` is already visible in the request."""
        return self._from_this_request(memory) or self._quoted(memory)

    def _from_this_request(self, memory: Memory) -> bool:
        if memory.conversation != self.conversation or not memory.sources:
            return False
        if self._turn_ids is None:
            self._turn_ids = request_turn_ids(self.conversation, self._said)
        return all(source in self._turn_ids for source in memory.sources)

    def _quoted(self, memory: Memory) -> bool:
        needle = _needle(memory.content)
        return bool(needle) and needle in self.haystack()

    def haystack(self) -> str:
        """The request's text, normalised, newest first, at most MAX_SCANNED_CHARS characters."""
        if self._haystack is None:
            pieces: list[str] = []
            size = 0
            for text in self._texts():
                if size >= MAX_SCANNED_CHARS:
                    break
                piece = normalise(text[-(MAX_SCANNED_CHARS - size) :])
                pieces.append(piece)
                size += len(piece) + 1
            self._haystack = "\n".join(pieces)
        return self._haystack

    def __getstate__(self) -> dict[str, object]:
        """What travels to the recall process: the turn ids and the bounded haystack, never the
        request's messages (a 20 MB request would be a 20 MB message, tap.wiring.recall_pipe)."""
        if self._turn_ids is None:
            self._turn_ids = request_turn_ids(self.conversation, self._said)
        return {
            "conversation": self.conversation,
            "_said": (),
            "_system": "",
            "_turn_ids": frozenset(self._turn_ids),
            "_haystack": self.haystack(),
        }

    def _texts(self) -> Iterable[str]:
        for entry in reversed(self._said):
            if entry.text:
                yield entry.text
            if entry.extra:
                yield entry.extra
        if self._system:
            yield self._system


class SessionLedger:
    """What the hook path already gave each session (bounded; see the module docstring)."""

    def __init__(self, max_sessions: int = MAX_SESSIONS) -> None:
        self._given: LRU[str, frozenset[str]] = LRU(max_sessions)

    def given(self, session: str) -> frozenset[str]:
        """The memory ids given to `session` since it started or was last reset."""
        return self._given.get(session) or frozenset()

    def skip(self, session: str) -> Skip:
        """A recall predicate leaving out what `session` was already given."""
        given = self.given(session)
        return lambda memory: memory.id in given

    def record(self, session: str, ids: Iterable[str]) -> None:
        """Note that `ids` were given to `session`."""
        self._given.put(session, self.given(session) | frozenset(ids))

    def reset(self, session: str) -> None:
        """Forget `session` (after compaction or a clear its earlier context is gone)."""
        self._given.pop(session)
