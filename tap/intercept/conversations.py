"""Which conversation a request belongs to, and the ids of its turns (docs/ways-in.md, Conversations).

Order, first match wins:
1. the `x-tap-conversation` header;
2. a session the client itself names (each dialect's `client_ids`): "s-" + a hash of scope and session;
3. continuity: after every complete exchange, a hash of (scope, client discriminator, the
   request's messages + the reply) is remembered with the conversation id; a request whose history
   (every message up to its last assistant message) hashes to a remembered value continues it;
4. a retry: a request identical to one seen less than `retry_window_s` ago whose exchange has not
   completed gets that request's id;
5. otherwise a fresh random id ("c-" + 16 hex digits).
The first user message alone never decides. Client discriminators (`metadata.user_id`, OpenAI
`user`, ...) are part of every hash, so two users never continue each other's chats, but they never
name a conversation on their own. Hashes are over a normalised form (tap.intercept.dialects.
transcript.Said), so moved `cache_control`, dropped thinking blocks or reordered keys keep the
conversation; remembered prefixes are bounded in memory and kept in the turn log (`ContinuityStore`).

Turn ids are derived from the conversation, the message's position and text (the same on a retry,
recomputable from any later request: `request_turn_ids`): human message i is
`turn_key(conversation, i + 1, text)`; assistant message j is `reply_key(conversation, j, text of
message j - 1 when that is a human message, else "")`.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from tap.intercept.dialects.transcript import ClientIds, PlainMessage, history_end
from tap.lru import LRU

CONVERSATION_HEADER = "x-tap-conversation"
RETRY_WINDOW_S = 120.0
MAX_REMEMBERED = 20_000
MAX_HEADER_ID = 200


def digest(*parts: str, size: int = 16) -> str:
    """A hex digest of the parts (NUL-separated, so ("ab", "c") differs from ("a", "bc"))."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()[:size]


def turn_key(conversation: str, position: int, text: str) -> str:
    """A stable id for one human turn (same on a retry, different for a later turn)."""
    return "u-" + digest(conversation, str(position), text)


def reply_key(conversation: str, position: int, previous_text: str) -> str:
    """A stable id for the assistant message at `position`; `previous_text` is the human text
    before it ("" after tool results). For a reply to a human turn it pairs with `turn_key`."""
    return "a-" + digest(conversation, str(position), previous_text)


def request_turn_ids(conversation: str, said: Sequence[PlainMessage]) -> set[str]:
    """The turn ids of every human and assistant message of a request (see the module docstring)."""
    ids: set[str] = set()
    for index, entry in enumerate(said):
        if entry.role == "user" and entry.text.strip():
            ids.add(turn_key(conversation, index + 1, entry.text))
        elif entry.role == "assistant" and index:
            before = said[index - 1]
            ids.add(reply_key(conversation, index, before.text if before.role == "user" else ""))
    return ids


def fingerprint(kind: str, scope: str, discriminator: str, entries: Sequence[PlainMessage], *extra: str) -> str:
    """A hash of the normalised entries (whitespace around each field ignored)."""
    h = hashlib.sha256()
    for part in (kind, scope, discriminator, *extra):
        h.update(part.encode("utf-8", "surrogatepass") + b"\x00")
    for entry in entries:
        for part in (entry.role, entry.text.strip(), entry.extra.strip()):
            h.update(part.encode("utf-8", "surrogatepass") + b"\x1f")
        h.update(b"\x1e")
    return kind + "-" + h.hexdigest()[:32]


def _conversational(entries: Sequence[PlainMessage]) -> list[PlainMessage]:
    return [e for e in entries if e.role != "system"]


class ContinuityStore(Protocol):
    """Where remembered prefixes survive a restart (tap.ingest.capture.TurnLog implements it)."""

    def continuity_get(self, key: str) -> str | None:
        """The conversation remembered for `key`, if any."""
        ...

    def continuity_put(self, key: str, conversation: str) -> None:
        """Remember `key` → `conversation`."""
        ...


@dataclass
class Resolved:
    """A request's conversation, how it was found, and what to remember after its reply."""

    conversation: str
    how: str  # "header" | "session" | "continuity" | "retry" | "new"
    scope: str = ""
    discriminator: str = ""
    retry_key: str = ""
    follows: bool = field(default=False)  # remember the continuity of this request's reply


@dataclass
class _Attempt:
    conversation: str
    answered: bool = False


class ConversationResolver:
    """Resolves conversation ids and remembers continuity (see the module docstring)."""

    def __init__(
        self,
        store: ContinuityStore | None = None,
        *,
        retry_window_s: float = RETRY_WINDOW_S,
        maxsize: int = MAX_REMEMBERED,
        new_id: Callable[[], str] = lambda: "c-" + uuid.uuid4().hex[:16],
    ) -> None:
        self.store = store
        self._prefixes: LRU[str, str] = LRU(maxsize)
        self._attempts: LRU[str, _Attempt] = LRU(maxsize, ttl_s=retry_window_s, refresh=False)
        self._new_id = new_id

    def resolve(
        self,
        headers: Mapping[str, str],
        scope: str,
        client: ClientIds,
        said: Sequence[PlainMessage],
        *,
        system: str = "",
        model: str = "",
    ) -> Resolved:
        """The conversation of a request (order in the module docstring)."""
        given = headers.get(CONVERSATION_HEADER, "").strip()
        if given:
            return Resolved(given[:MAX_HEADER_ID], "header", scope)
        if client.session:
            return Resolved("s-" + digest(scope, client.session), "session", scope)
        disc = client.discriminator
        history = _conversational(said[: history_end(said)])
        if history:
            found = self.lookup(fingerprint("p", scope, disc, history))
            if found is not None:
                return Resolved(found, "continuity", scope, disc, follows=True)
        retry_key = fingerprint("r", scope, disc, said, model, system)
        attempt = self._attempts.get(retry_key)
        if attempt is not None and not attempt.answered:
            return Resolved(attempt.conversation, "retry", scope, disc, retry_key, follows=True)
        conversation = self._new_id()
        self._attempts.put(retry_key, _Attempt(conversation))
        return Resolved(conversation, "new", scope, disc, retry_key, follows=True)

    def lookup(self, key: str) -> str | None:
        """The conversation remembered for a prefix key (memory first, then the store)."""
        found = self._prefixes.get(key)
        if found is None and self.store is not None:
            found = self.store.continuity_get(key)
            if found is not None:
                self._prefixes.put(key, found)
        return found

    def answered(self, resolved: Resolved, said: Sequence[PlainMessage], reply_text: str) -> str:
        """Remember that the request completed with `reply_text`; returns the prefix key to persist
        ("" when nothing needs remembering)."""
        if resolved.retry_key:
            attempt = self._attempts.get(resolved.retry_key)
            if attempt is not None:
                attempt.answered = True
        if not resolved.follows:
            return ""
        entries = [*_conversational(said), PlainMessage("assistant", reply_text)]
        key = fingerprint("p", resolved.scope, resolved.discriminator, entries)
        self._prefixes.put(key, resolved.conversation)
        return key

    def persist(self, key: str, conversation: str) -> None:
        """Write a remembered prefix to the store (blocking: call it off the event loop)."""
        if key and self.store is not None:
            self.store.continuity_put(key, conversation)
