"""AdminClient: the CLI's client of a running `tap serve`'s admin API.

It offers the MemoryService operations (same names and result types) and `ingest`, which hands
IngestEvents to `POST /tap/ingest` split into requests of at most MAX_MESSAGES messages and about
MAX_BYTES of JSON, in order (so the server's body limit is never hit). CLI commands use it when a
server holds the data dir, so two processes never open embedded Chroma at once. Requests go
through the one HTTP client of tap serve, bridges.admin_http (the hook command's too).
tap.memories (the recall engine, the queue) is imported only by the methods that decode its
result types, so `tap recall` / `tap status` against a server start fast.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from bridges.admin_http import NoAnswer, exchange
from tap.errors import StoreError
from tap.ports import StoreStats
from tap.records import IngestEvent, Memory, Message

if TYPE_CHECKING:
    from tap.memories.conflicts import Conflict, Settled
    from tap.memories.service import Forgotten, ImportReport
    from tap.records import SourceTurn

CONSOLIDATE_TIMEOUT_S = 3600.0  # a first consolidation of a large store takes a while
INGEST_TIMEOUT_S = 120.0  # `tap ingest` sends large backfills
MAX_MESSAGES = 1000
MAX_BYTES = 4 << 20


def _quote(memory_id: str) -> str:
    return urllib.parse.quote(memory_id, safe="")


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


class AdminClient:
    """The admin API over HTTP: MemoryService's methods (same names and return types) and `ingest`.
    Errors: 404 → KeyError, 400 → ValueError, anything else or no answer → StoreError."""

    def __init__(self, url: str, token: str, *, timeout: float = 60.0) -> None:
        self.url = url.rstrip("/")
        self._token = token
        self._timeout = timeout

    def _request(
        self,
        method: str,
        path: str,
        *,
        body: bytes | None = None,
        query: dict[str, Any] | None = None,
        timeout: float | None = None,
    ) -> bytes:
        try:
            status, data = exchange(
                self.url, method, path, token=self._token, body=body, query=query, timeout=timeout or self._timeout
            )
        except (NoAnswer, ValueError) as exc:
            raise StoreError(str(exc)) from exc
        if status >= 400:
            raise self._error(status, data)
        return data

    @staticmethod
    def _error(status: int, body: bytes) -> Exception:
        try:
            message = json.loads(body).get("error", "") or f"HTTP {status}"
        except (ValueError, AttributeError):
            message = body[:200].decode(errors="replace") or f"HTTP {status}"
        if status == 404:
            return KeyError(message)
        if status == 400:
            return ValueError(message)
        return StoreError(f"tap serve answered {status}: {message}")

    def _json(self, method: str, path: str, payload: Any = None, **query: Any) -> Any:
        body = None if payload is None else msgspec.json.encode(payload)
        return json.loads(self._request(method, path, body=body, query=query))

    def add(self, *, scope: str, content: str, **fields: Any) -> Memory:
        data = self._json("POST", "/tap/memories", {"scope": scope, "content": content, **fields})
        return msgspec.convert(data, Memory)

    def get(self, memory_id: str) -> Memory | None:
        chain = self.chain(memory_id)
        return next((m for m in chain if m.id == memory_id), None)

    def chain(self, memory_id: str) -> list[Memory]:
        try:
            data = self._json("GET", f"/tap/memories/{urllib.parse.quote(memory_id, safe='')}")
        except KeyError:
            return []
        return msgspec.convert(data["chain"], list[Memory])

    def history(self, memory_id: str) -> tuple[list[Memory], dict[str, list[SourceTurn]]]:
        from tap.records import SourceTurn

        try:
            data = self._json("GET", f"/tap/memories/{urllib.parse.quote(memory_id, safe='')}")
        except KeyError:
            return [], {}
        chain = msgspec.convert(data["chain"], list[Memory])
        turns = {v["id"]: msgspec.convert(v.get("turns", []), list[SourceTurn]) for v in data.get("history", [])}
        return chain, turns

    def archive(self, memory_id: str) -> Memory:
        return msgspec.convert(self._json("POST", f"/tap/memories/{_quote(memory_id)}/archive", {}), Memory)

    def restore(self, memory_id: str) -> Memory:
        return msgspec.convert(self._json("POST", f"/tap/memories/{_quote(memory_id)}/restore", {}), Memory)

    def conflicts(self, *, scope: str | None = None) -> list[Conflict]:
        from tap.memories.conflicts import Conflict

        data = self._json("GET", "/tap/conflicts", scope=scope)
        return msgspec.convert(data["conflicts"], list[Conflict])

    def resolve(self, keep: str, drop: str, *, both: bool = False) -> Settled:
        from tap.memories.conflicts import Settled

        data = self._json("POST", "/tap/conflicts/resolve", {"keep": keep, "drop": drop, "both": both})
        return msgspec.convert({k: v for k, v in data.items() if v is not None}, Settled)

    def consolidate(self, *, scope: str | None = None, dry_run: bool = False) -> dict[str, Any]:
        payload = msgspec.json.encode({"dry_run": dry_run, **({"scope": scope} if scope else {})})
        return dict(json.loads(self._request("POST", "/tap/consolidate", body=payload, timeout=CONSOLIDATE_TIMEOUT_S)))

    def why(self, request_id: str | None = None) -> dict[str, Any]:
        """One request's record (the newest when `request_id` is None)."""
        path = "/tap/why/last" if request_id is None else f"/tap/why/{_quote(request_id)}"
        return dict(self._json("GET", path))

    def why_recent(self, limit: int = 20) -> list[dict[str, Any]]:
        """The latest requests, newest first."""
        return list(self._json("GET", "/tap/why", limit=limit)["requests"])

    def edit(self, memory_id: str, **fields: Any) -> Memory:
        payload = {k: v for k, v in fields.items() if v is not None}
        data = self._json("PATCH", f"/tap/memories/{urllib.parse.quote(memory_id, safe='')}", payload)
        return msgspec.convert(data, Memory)

    def forget(self, memory_id: str) -> list[str]:
        return self.forget_memory(memory_id).deleted

    def forget_memory(self, memory_id: str) -> Forgotten:
        from tap.memories.service import Forgotten

        try:
            data = self._json("DELETE", f"/tap/memories/{urllib.parse.quote(memory_id, safe='')}")
        except KeyError:
            return Forgotten()
        return msgspec.convert(data, Forgotten)

    def erase_scope(self, scope: str) -> dict[str, int]:
        return dict(self._json("POST", "/tap/forget", {"scope": scope})["removed"])

    def requeue_dead(self) -> int:
        return int(self._json("POST", "/tap/extract/retry")["requeued"])

    def list_memories(
        self,
        *,
        scope: str | None,
        limit: int = 50,
        offset: int = 0,
        all_versions: bool = False,
        excerpts: bool | None = None,
        archived: bool | None = None,
    ) -> list[Memory]:
        layer = None if excerpts is None else "excerpts" if excerpts else "memories"
        data = self._json(
            "GET",
            "/tap/memories",
            scope=scope,
            limit=limit,
            offset=offset,
            all="1" if all_versions else None,
            layer=layer,
            archived=None if archived is None else "1" if archived else "0",
        )
        return msgspec.convert(data["memories"], list[Memory])

    def count_memories(
        self,
        *,
        scope: str | None,
        all_versions: bool = False,
        excerpts: bool | None = None,
        archived: bool | None = None,
    ) -> int:
        layer = None if excerpts is None else "excerpts" if excerpts else "memories"
        data = self._json(
            "GET",
            "/tap/memories",
            scope=scope,
            limit=1,
            all="1" if all_versions else None,
            layer=layer,
            archived=None if archived is None else "1" if archived else "0",
        )
        return int(data["total"])

    def search(
        self,
        query: str,
        *,
        scope: str | None,
        limit: int = 20,
        excerpts: bool | None = None,
        archived: bool | None = False,
        all_versions: bool = False,
    ) -> list[tuple[Memory, float]]:
        data = self._json(
            "GET",
            "/tap/memories/search",
            q=query,
            scope=scope,
            limit=limit,
            layer=None if excerpts is None else "excerpts" if excerpts else "memories",
            archived="all" if archived is None else "1" if archived else "0",
            all="1" if all_versions else None,
        )
        return [(msgspec.convert(r["memory"], Memory), float(r["score"])) for r in data["results"]]

    def recall_json(self, text: str, *, scope: str, budget_tokens: int | None = None) -> dict[str, Any]:
        payload = {"text": text, "scope": scope, "budget_tokens": budget_tokens}
        return dict(self._json("POST", "/tap/recall", payload))

    def export(self, *, scope: str | None = None) -> Iterator[bytes]:
        yield from self._request("GET", "/tap/export", query={"scope": scope}).splitlines(keepends=True)

    def import_lines(self, lines: Iterable[bytes | str]) -> ImportReport:
        from tap.memories.service import ImportReport

        body = b"".join(line.encode() if isinstance(line, str) else line for line in lines)
        return msgspec.json.decode(self._request("POST", "/tap/import", body=body), type=ImportReport)

    def status(self) -> dict[str, Any]:
        return dict(self._json("GET", "/tap/status"))

    def signin_code(self) -> str:
        """A one-time code that signs the web page in (`tap ui`; proxy.signin)."""
        return str(self._json("POST", "/tap/signin")["code"])

    def stats(self) -> StoreStats:
        return msgspec.json.decode(self._request("GET", "/tap/stats"), type=StoreStats)

    def ingest(self, events: Sequence[IngestEvent]) -> int:
        """Send every event (split as needed) to `POST /tap/ingest`; the new turns the server queued.
        Nothing is retried here: the caller keeps its offset and tries again."""
        queued = 0
        for event in events:
            for part in split_event(event):
                try:
                    body = self._request("POST", "/tap/ingest", body=msgspec.json.encode(part))
                except (KeyError, ValueError) as exc:
                    raise StoreError(f"tap serve at {self.url} refused the events: {exc}") from exc
                queued += int(json.loads(body)["queued"])
        return queued
