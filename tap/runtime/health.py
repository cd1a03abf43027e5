"""`GET /tap/health`: is tap able to do its job right now?

Checks, each bounded by CHECK_TIMEOUT_S and run off the event loop:
- store: a cheap read (one id lookup) against the memory store (embedded Chroma or the server),
  and whatever the store itself reports wrong (a write that has not returned for 30 s, its
  database file deleted under it);
- embedder: one short query embedding;
- extractor: what the extraction worker reports — running, waiting for the store (chunks are
  kept and retried), paused by the daily budget, and how many chunks are queued or dead;
- disk: free space in the data dir (tap.runtime.diskspace: below `[data] min_free_mb`, or a write
  that just met a full disk, nothing more is stored);
- capture: exchanges that could not be written and wait in memory, and how many were lost.

`status` is `ok`, `degraded` (the extractor is waiting or paused, or has dead letters, the disk
is full, captures fail: recall works, what is said now may not be kept) or `down` (the store or
the embedder does not answer, or the store's files are gone: recall cannot work, requests are
forwarded without memories). The route answers 503 for `down`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from tap.ports import Embedder, MemoryReader
from tap.runtime.diskspace import MB, SpaceWatch

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


def disk_state(space: SpaceWatch | None) -> dict[str, Any]:
    """The disk's part of the health document."""
    if space is None:
        return {"ok": True}
    problem = space.problem()
    out: dict[str, Any] = {"ok": not problem, "free_mb": space.free_mb(), "min_free_mb": space.min_free / MB}
    if problem:
        out["error"] = problem
    return out


def capture_state(capture: Callable[[], dict[str, Any]] | None) -> dict[str, Any]:
    """The capture's part of the health document, from Capture.status."""
    if capture is None:
        return {"ok": True}
    status = capture()
    out: dict[str, Any] = {"ok": not status.get("failing"), "waiting": status.get("waiting", 0)}
    out["lost"] = status.get("lost", 0)
    if status.get("failing"):
        out["error"] = status["failing"]
    return out


async def check_health(
    store: MemoryReader,
    embedder: Embedder,
    extraction: Callable[[], dict[str, Any]] | None,
    *,
    space: SpaceWatch | None = None,
    capture: Callable[[], dict[str, Any]] | None = None,
    store_problem: Callable[[], str] | None = None,
) -> dict[str, Any]:
    """`{"status", "checks": {"store", "embedder", "extractor", "disk", "capture"}}` (see the
    module docstring)."""
    store_check, embedder_check = await asyncio.gather(
        _probe(lambda: store.get(["tap-health-probe"])), _probe(lambda: embedder.embed_query("health"))
    )
    gone = store_problem() if store_problem is not None else ""
    if gone:
        store_check = {"ok": False, "error": gone}
    worker: dict[str, Any] | None = None
    if extraction is not None:
        try:
            worker = await asyncio.wait_for(asyncio.to_thread(extraction), CHECK_TIMEOUT_S)
        except Exception as exc:
            worker = {"paused": f"status unavailable: {type(exc).__name__}"}
    extractor = extractor_state(worker)
    disk, captured = disk_state(space), capture_state(capture)
    if not (store_check["ok"] and embedder_check["ok"]):
        status = "down"
    elif extractor["state"] not in ("running", "not running") or extractor.get("dead"):
        status = "degraded"
    elif not (disk["ok"] and captured["ok"]):
        status = "degraded"
    else:
        status = "ok"
    checks = {"store": store_check, "embedder": embedder_check, "extractor": extractor, "disk": disk}
    checks["capture"] = captured
    doc: dict[str, Any] = {"status": status, "checks": checks}
    if status != "ok":  # one line saying why, from the checks that are not ok
        whys = [
            f"{name}: {check.get('error') or check.get('reason') or check.get('state')}"
            for name, check in checks.items()
        ]
        doc["reason"] = (
            "; ".join(why for why, check in zip(whys, checks.values(), strict=True) if _not_ok(check))
            or f"extractor: {extractor.get('dead')} dead letters"
        )
    return doc


def _not_ok(check: dict[str, Any]) -> bool:
    if "ok" in check:
        return not check["ok"]
    return check.get("state") not in ("running", "not running")
