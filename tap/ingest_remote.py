"""RemoteIngest: hand IngestEvents to a running `tap serve` through `POST /tap/ingest`.

Used by `tap ingest` when a server holds the data dir (only one process may open embedded Chroma).
Large events are split into requests of at most MAX_MESSAGES messages and about MAX_BYTES of
JSON, in order, so the server's body limit and `MAX_MESSAGES` per request are never hit. Standard
library only (urllib), like tap.client.

Errors: the server not answering, or answering anything but 202, raises StoreError naming the
server and its message; nothing is retried here (the caller keeps its offset and tries again).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence

import msgspec

from tap.errors import StoreError
from tap.records import IngestEvent, Message

__all__ = ["RemoteIngest", "split_event"]

MAX_MESSAGES = 1000
MAX_BYTES = 4 << 20


def split_event(
    event: IngestEvent, *, max_messages: int = MAX_MESSAGES, max_bytes: int = MAX_BYTES
) -> Iterator[IngestEvent]:
    """The event as consecutive parts within the request limits (one part when it is small)."""
    part: list[Message] = []
    size = 0
    for message in event.messages:
        cost = len(message.content.encode()) + 200
        if part and (len(part) >= max_messages or size + cost > max_bytes):
            yield msgspec.structs.replace(event, messages=part)
            part, size = [], 0
        part.append(message)
        size += cost
    if part:
        yield msgspec.structs.replace(event, messages=part)


class RemoteIngest:
    """POSTs events to `<url>/tap/ingest` with the admin bearer token."""

    def __init__(self, url: str, token: str, *, timeout: float = 120.0) -> None:
        self.url = url.rstrip("/")
        self._token = token
        self._timeout = timeout

    def send(self, events: Sequence[IngestEvent]) -> int:
        """Send every event (split as needed); returns the new turns the server queued."""
        return sum(self._post(part) for event in events for part in split_event(event))

    def _post(self, event: IngestEvent) -> int:
        req = urllib.request.Request(f"{self.url}/tap/ingest", data=msgspec.json.encode(event), method="POST")
        req.add_header("Authorization", f"Bearer {self._token}")
        req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=self._timeout) as resp:
                return int(json.loads(resp.read())["queued"])
        except urllib.error.HTTPError as exc:
            try:
                message = json.loads(exc.read()).get("error", exc.reason)
            except ValueError:
                message = exc.reason
            raise StoreError(f"tap serve at {self.url} refused the events ({exc.code}): {message}") from exc
        except (urllib.error.URLError, OSError) as exc:
            raise StoreError(f"tap serve at {self.url} did not answer: {exc}") from exc
