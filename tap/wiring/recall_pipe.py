"""The pipe between `tap serve` and its recall process, so that neither end ever waits on the other.

Both ends read all the time: a reader thread on each side takes every message as it comes, so a
send only waits while the other side is busy with one message, never because it is itself blocked
sending (the deadlock of two full socket buffers). On top of that:
- messages are bounded (`MAX_MESSAGE` pickled bytes): a recall that would not fit runs in
  `tap serve`, an answer that would not fit comes back empty, and a write too large to describe is
  sent as "re-read everything" (a `Committed` with `cleared`, which a follower applies by dropping
  what it kept);
- `tap serve` hands every message to an `Outbox` and one writer thread sends them in order: no
  lock is held across a send, so a write of the lexical index (which tells the child inside its
  transaction) never waits on the pipe; an outbox that grows past `MAX_QUEUED` follows while the
  child does not read collapses them into one "re-read everything";
- a watchdog of its own (tap.wiring.recall_process) stops a child that answers nothing or takes
  no message for `STUCK_S`, whatever the other threads are doing.
"""

from __future__ import annotations

import pickle
import threading
from collections import deque

from store.lexical import Committed

MAX_MESSAGE = 1024 * 1024
"""Largest message either side sends, pickled (a recall's query is bounded, and so is an answer
with its `tap why` trace: only a request's own text could be larger)."""
MAX_QUEUED = 10_000
"""Follows kept for a child that does not read before they are collapsed into one re-read."""
REREAD = Committed(cleared=True)
"""What a follower is told instead of a write too large to send, or of too many queued writes."""


def encoded(value: object) -> bytes | None:
    """The value pickled, or None when that is over MAX_MESSAGE (or it does not pickle)."""
    try:
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError):
        return None
    return data if len(data) <= MAX_MESSAGE else None


def follow_message(committed: Committed) -> bytes:
    """A write to follow, pickled; a re-read when it is too large to describe."""
    return encoded(("follow", committed)) or pickle.dumps(("follow", REREAD), protocol=pickle.HIGHEST_PROTOCOL)


class Outbox:
    """Messages for the child in the order they were put, taken by one writer thread."""

    def __init__(self) -> None:
        self._items: deque[tuple[str, bytes]] = deque()  # (kind, pickled)
        self._ready = threading.Condition()
        self._follows = 0
        self._closed = False
        self.sending_since: float | None = None  # set by the writer while a send is under way

    def put(self, kind: str, data: bytes) -> bool:
        """Queue one message (never blocks); False once the outbox is closed."""
        with self._ready:
            if self._closed:
                return False
            if kind == "follow":
                self._follows += 1
                if self._follows > MAX_QUEUED:
                    self._collapse()
            self._items.append((kind, data))
            self._ready.notify()
            return True

    def _collapse(self) -> None:
        """Replace every queued follow by one re-read at the front: a recall queued after any of them
        then reads the file as it is now, which holds every one of those writes."""
        kept = [item for item in self._items if item[0] != "follow"]
        self._items = deque([("follow", follow_message(REREAD)), *kept])
        self._follows = 1

    def take(self) -> bytes | None:
        """The next message, waiting for one; None once closed."""
        with self._ready:
            while not self._items and not self._closed:
                self._ready.wait()
            if self._closed:
                return None
            kind, data = self._items.popleft()
            if kind == "follow":
                self._follows -= 1
            return data

    def close(self) -> None:
        """Drop what is queued and wake the writer."""
        with self._ready:
            self._closed = True
            self._items.clear()
            self._ready.notify_all()

    def __len__(self) -> int:
        with self._ready:
            return len(self._items)

    def stuck_for(self, now: float) -> float:
        """How long the send under way has waited (0 when none is)."""
        since = self.sending_since
        return 0.0 if since is None else now - since
