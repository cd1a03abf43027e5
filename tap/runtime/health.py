"""`GET /tap/health`: is tap able to do its job right now?

Three checks, each bounded by CHECK_TIMEOUT_S and run off the event loop:
- store: a cheap read (one id lookup) against the memory store (embedded Chroma or the server);
- embedder: one short query embedding;
- extractor: what the extraction worker reports — running, waiting for the store (chunks are
  kept and retried), paused by the daily budget, and how many chunks are queued or dead.

`status` is `ok`, `degraded` (the extractor is waiting or paused, or has dead letters: recall
works, extraction lags) or `down` (the store or the embedder does not answer: recall cannot work,
requests are forwarded without memories). The route answers 503 for `down`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from tap.ports import Embedder, MemoryReader

CHECK_TIMEOUT_S = 3.0


async def _probe(fn: Callable[[], object]) -> dict[str, Any]:
    started = time.perf_counter()
    try:
        await asyncio.wait_for(asyncio.to_thread(fn), CHECK_TIMEOUT_S)
    except TimeoutError:
        return {"ok": False, "error": f"no answer within {CHECK_TIMEOUT_S:.0f} s"}
    except Exception as exc:
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:500]}
    return {"ok": True, "ms": round((time.perf_counter() - started) * 1000, 1)}


def extractor_state(status: dict[str, Any] | None) -> dict[str, Any]:
    """The extractor's part of the health document, from the worker's status."""
    if status is None:
        return {"state": "not running"}
    queue = status.get("queue", {})
    state = "running"
    if status.get("waiting_for_store"):
        state = "waiting for the store"
    elif status.get("paused"):
        state = "paused"
    out: dict[str, Any] = {
        "state": state,
        "queued": queue.get("queued", 0),
        "dead": queue.get("dead", 0),
    }
    reason = status.get("waiting_for_store") or status.get("paused")
    if reason:
        out["reason"] = reason
    return out


async def check_health(
    store: MemoryReader, embedder: Embedder, extraction: Callable[[], dict[str, Any]] | None
) -> dict[str, Any]:
    """`{"status", "checks": {"store", "embedder", "extractor"}}` (see the module docstring)."""
    store_check, embedder_check = await asyncio.gather(
        _probe(lambda: store.get(["tap-health-probe"])), _probe(lambda: embedder.embed_query("health"))
    )
    worker: dict[str, Any] | None = None
    if extraction is not None:
        try:
            worker = await asyncio.wait_for(asyncio.to_thread(extraction), CHECK_TIMEOUT_S)
        except Exception as exc:
            worker = {"paused": f"status unavailable: {type(exc).__name__}"}
    extractor = extractor_state(worker)
    if not (store_check["ok"] and embedder_check["ok"]):
        status = "down"
    elif extractor["state"] not in ("running", "not running") or extractor.get("dead"):
        status = "degraded"
    else:
        status = "ok"
    return {"status": status, "checks": {"store": store_check, "embedder": embedder_check, "extractor": extractor}}
