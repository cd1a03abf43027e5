"""Recall and ingestion through a running `tap serve` (a standalone `tap mitm` next to a server).

Only one process may open the embedded store, so a `tap mitm` started while `tap serve` runs uses
the server's admin API: `POST /tap/recall` for each human turn's block and `POST /tap/ingest` for
each captured exchange; it keeps the conversation state and the turn log (SQLite, shared safely
with the server) itself.

`AdminApiRecaller.recall_async` keeps the core's contract (tap.intercept.core.Recaller): it raises
TimeoutError past the deadline (the request goes on without memories), and the memories the
model can already see in the request (`skip`) are left out: the server packs the block; when
one of its memories is to be skipped, the block is packed again here from the others
(tap.recall.engine.pack_block), so it may hold fewer memories than a local recall would.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import aiohttp
import msgspec

from bridges.mitm.spool import ServerGone
from tap.errors import StoreError
from tap.recall.engine import pack_block
from tap.recall.why import RecallTrace
from tap.records import IngestEvent, Memory, Recalled, RecallResult

INGEST_TIMEOUT = aiohttp.ClientTimeout(total=60, connect=5)
HEALTH_TIMEOUT = aiohttp.ClientTimeout(total=2)
_VIEW_FIELDS = ("id", "scope", "content", "kind", "importance", "conversation", "sources", "valid_from")


def memory_of(view: dict[str, Any]) -> Memory:
    """A Memory from one entry of the recall view (what packing and `skip` need)."""
    fields = {key: view[key] for key in _VIEW_FIELDS if view.get(key) is not None}
    fields["created_at"] = float(view.get("valid_from") or 0.0)
    return msgspec.convert(fields, Memory)


def result_of(view: dict[str, Any], skip: Callable[[Memory], bool] | None, budget: int) -> RecallResult:
    """The server's recall view as a RecallResult, without the memories `skip` names."""
    entries = [
        Recalled(memory=memory_of(entry), score=float(entry.get("score") or 0.0), tokens=int(entry.get("tokens") or 0))
        for entry in view.get("memories") or []
    ]
    kept = [r for r in entries if skip is None or not skip(r.memory)]
    if len(kept) == len(entries):
        return RecallResult(block=str(view.get("block") or ""), tokens=int(view.get("tokens") or 0), memories=entries)
    return pack_block([(r.memory, r.score) for r in kept], budget)


class AdminApiRecaller:
    """tap.intercept.core.Recaller over a running server's `POST /tap/recall`."""

    def __init__(self, url: str, token: str, budget_tokens: int) -> None:
        self.url = url.rstrip("/")
        self.budget = budget_tokens
        self._headers = {"Authorization": f"Bearer {token}"}
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(headers=self._headers, trust_env=False)
        return self._session

    async def recall_async(
        self,
        query: str,
        *,
        scope: str,
        deadline_ms: int | None = None,
        skip: Callable[[Memory], bool] | None = None,
        trace: RecallTrace | None = None,
    ) -> RecallResult:
        """The block for `query` in `scope`; TimeoutError past the deadline, StoreError otherwise.
        The recall runs in the server, so there is no `trace` here (it is ignored)."""
        payload = {"text": query, "scope": scope, "budget_tokens": self.budget}
        async with asyncio.timeout((deadline_ms or 1000) / 1000):
            try:
                async with self._client().post(self.url + "/tap/recall", json=payload) as response:
                    if response.status != 200:
                        raise StoreError(f"tap serve at {self.url} answered {response.status} to a recall")
                    view = await response.json()
            except aiohttp.ClientError as exc:
                raise StoreError(f"tap serve at {self.url} did not answer: {exc}") from exc
        return result_of(view, skip, self.budget)

    async def ingest(self, event: IngestEvent) -> int:
        """Hand a captured exchange to the server's ingestion entry point; ServerGone when it does
        not answer (or answers 5xx), StoreError when it refuses the exchange."""
        try:
            async with self._client().post(
                self.url + "/tap/ingest", data=msgspec.json.encode(event), timeout=INGEST_TIMEOUT
            ) as response:
                if response.status >= 500:
                    raise ServerGone(f"tap serve at {self.url} answered {response.status}")
                if response.status != 202:
                    raise StoreError(f"tap serve at {self.url} refused the exchange ({response.status})")
                return int((await response.json())["queued"])
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise ServerGone(f"tap serve at {self.url} is not answering ({exc or type(exc).__name__})") from exc

    async def answers(self, url: str) -> bool:
        """Whether a tap serve answers `/tap/health` at `url`; if so, later calls go there (a server
        that restarted may listen on another port)."""
        try:
            async with self._client().get(url.rstrip("/") + "/tap/health", timeout=HEALTH_TIMEOUT) as response:
                if response.status != 200:
                    return False
        except (aiohttp.ClientError, TimeoutError):
            return False
        self.url = url.rstrip("/")
        return True

    async def close(self) -> None:
        """Close the HTTP session."""
        if self._session is not None:
            await self._session.close()
