"""The cost ledger: tokens and estimated dollars per LLM call, per provider, per UTC day.

Lives in the queue database (same durability). `spent_today()` is what the daily budget
(`[extract] daily_budget_usd`) is checked against before every LLM call; when it is reached,
LLM work pauses until the next UTC midnight and the chunks stay queued.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tap.sqlite import Step, connect, migrate


def utc_day(stamp: float) -> str:
    """YYYY-MM-DD (UTC) of a timestamp."""
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%d")


def next_utc_midnight(stamp: float) -> float:
    """The first second of the next UTC day."""
    day = datetime.fromtimestamp(stamp, UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return (day + timedelta(days=1)).timestamp()


_MIGRATIONS: tuple[Step, ...] = (
    (  # 1: one row per LLM call
        "CREATE TABLE IF NOT EXISTS llm_calls (at REAL NOT NULL, day TEXT NOT NULL, provider TEXT NOT NULL, "
        "model TEXT NOT NULL, purpose TEXT NOT NULL, input_tokens INTEGER NOT NULL, "
        "output_tokens INTEGER NOT NULL, cost_usd REAL NOT NULL)",
        "CREATE INDEX IF NOT EXISTS llm_calls_day ON llm_calls (day)",
    ),
)
"""The ledger's table in queue.db (tap.sqlite.migrate: steps are appended, never edited)."""


class CostLedger:
    """Append-only record of LLM calls with per-day totals (thread-safe)."""

    def __init__(self, path: Path, *, now: Callable[[], float] = time.time) -> None:
        self._now = now
        self._lock = threading.Lock()
        self._db = connect(path)
        migrate(self._db, "costs", _MIGRATIONS)

    def record(
        self, *, provider: str, model: str, purpose: str, input_tokens: int, output_tokens: int, cost_usd: float
    ) -> None:
        """Add one call."""
        at = self._now()
        with self._lock:
            self._db.execute(
                "INSERT INTO llm_calls VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (at, utc_day(at), provider, model, purpose, input_tokens, output_tokens, cost_usd),
            )

    def spent_today(self) -> float:
        """Dollars spent since UTC midnight."""
        with self._lock:
            row = self._db.execute(
                "SELECT coalesce(sum(cost_usd), 0) FROM llm_calls WHERE day = ?", (utc_day(self._now()),)
            ).fetchone()
        return float(row[0])

    def today(self) -> dict[str, Any]:
        """Today's calls, tokens and dollars per provider, model and purpose."""
        with self._lock:
            rows = self._db.execute(
                "SELECT provider, model, purpose, count(*), sum(input_tokens), sum(output_tokens), sum(cost_usd) "
                "FROM llm_calls WHERE day = ? GROUP BY provider, model, purpose ORDER BY provider, model, purpose",
                (utc_day(self._now()),),
            ).fetchall()
        calls = [
            {
                "provider": p,
                "model": m,
                "purpose": u,
                "calls": n,
                "input_tokens": i,
                "output_tokens": o,
                "cost_usd": round(c, 6),
            }
            for p, m, u, n, i, o, c in rows
        ]
        return {"day": utc_day(self._now()), "cost_usd": round(sum(c["cost_usd"] for c in calls), 6), "calls": calls}

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
