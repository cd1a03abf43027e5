"""The fuzz suite with a short budget: every route of `tap serve`, seeded malformed requests.

A failure prints the offending requests; `./dev bench fuzz --seed N` replays a seed with a long
budget (bench/fuzz.py). Cases: testkit/fuzzer.py; target: testkit/fuzz_target.py.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from testkit.fuzz_target import FuzzTarget
from testkit.fuzzer import fuzz

CASES = 700


@pytest.mark.parametrize("seed", [11, pytest.param(12, marks=pytest.mark.slow)])  # the second seed: CI
async def test_no_route_answers_bad_input_with_a_5xx(isolated_home: Path, seed: int) -> None:
    async with FuzzTarget(isolated_home) as target:
        target.seed_memories()
        report = await fuzz(
            target.url,
            target.routes,
            token=target.token,
            seed=seed,
            cases=CASES,
            extra_headers=target.webhook_headers,
            known_ids=target.memory_ids(),
            shape_check=lambda path: not path.startswith("/telegram/"),
        )
        failures = await asyncio.to_thread(target.extract)
        problems = await target.read_back()
    shown = "\n".join(f"{f.status} {f.case}\n  → {f.body[:300]}" for f in report.server_errors[:10])
    assert report.cases == CASES and not report.server_errors, shown
    assert not report.shape_errors, "\n".join(f"{f.status} {f.case} → {f.body[:200]}" for f in report.shape_errors)
    assert not report.transport_errors, report.transport_errors[:5]
    assert failures == 0 and problems == []
    covered = {r.pattern for r in target.routes}
    assert {"/tap/memories/{memory_id}", "/v1/messages", "/api/chat", "/tap/import", "/telegram/webhook"} <= covered
    assert report.statuses[200] > CASES // 4 and report.statuses[400] > CASES // 10  # both paths exercised
