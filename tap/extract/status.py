"""The extraction part of `tap status` (`/tap/status`'s `extraction`): the queue, its dead letters
and today's LLM spend, with what the worker running them reports (nothing, when none runs: `tap
status` without a server reads the files alone).

Light on purpose: it imports neither the pipeline nor the extractors, so a status without a server
starts fast.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tap.config import ExtractConfig
    from tap.extract.costs import CostLedger
    from tap.ingest.queue import ChunkQueue


def extraction_status(
    queue: ChunkQueue,
    ledger: CostLedger,
    config: ExtractConfig,
    *,
    counters: Mapping[str, int] | None = None,
    processed: int = 0,
    failures: int = 0,
    paused: str = "",
    waiting_for_store: str = "",
    waiting_for_gap: bool = False,
    postponed_for_outage: int = 0,
) -> dict[str, Any]:
    """Queue depth, dead letters, gate counters, spend today (the worker's own figures when one runs)."""
    counts = dict(counters or {})
    chunks = counts.get("chunks", 0)
    passed = counts.get("extracted", 0)
    return {
        "queue": queue.counts(),
        "dead_letters": queue.dead_letters(5),
        "processed": processed,
        "failures": failures,
        "paused": paused,
        "waiting_for_store": waiting_for_store,
        "waiting_for_gap": waiting_for_gap,
        "postponed_for_outage": postponed_for_outage,
        "gate_pass_rate": round(passed / chunks, 3) if chunks else None,
        "counters": counts,
        "cost_today": ledger.today(),
        "daily_budget_usd": config.daily_budget_usd,
    }
