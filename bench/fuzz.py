"""Fuzz every route of tap with seeded malformed requests: cases tried and 5xx answered (must be 0).

Run: ``./dev bench fuzz [--cases 20000] [--seed 1] [--concurrency 4]`` (``--quick``: 300 cases).
It builds the whole `tap serve` app in this process (testkit/fuzz_target.py: real store, embedder,
queue, turn log, hooks and Telegram routes) in front of fake upstreams, sends the cases of
testkit/fuzzer.py (deep nesting, invalid UTF-8, wrong Content-Encoding, nulls and wrong types, empty
and huge ids, out-of-range timestamps, truncated and random bytes, odd methods, queries and
headers), then extracts everything the fuzz queued and reads every scope back (recall, search,
list, export, stats, status, health). Writes ``bench/results/fuzz.json``; exits 1 when tap
answered any 5xx, an error outside its route's shape, or a read failed afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import benchutil

from testkit.fuzz_target import FuzzTarget
from testkit.fuzzer import FuzzReport, fuzz


async def run(cases: int, seed: int, concurrency: int) -> tuple[FuzzReport, dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="tap-fuzz-") as home:
        async with FuzzTarget(Path(home)) as target:
            target.seed_memories()
            report = await fuzz(
                target.url,
                target.routes,
                token=target.token,
                seed=seed,
                cases=cases,
                concurrency=concurrency,
                extra_headers=target.webhook_headers,
                known_ids=target.memory_ids(),
                shape_check=lambda path: not path.startswith("/telegram/"),
                on_progress=lambda n: benchutil.note(f"  {n} cases"),
            )
            started = time.perf_counter()
            failures = await asyncio.to_thread(target.extract)
            after = {
                "extraction_failures": failures,
                "extract_s": round(time.perf_counter() - started, 1),
                "read_back_problems": await target.read_back(),
                "routes": [f"{r.method} {r.pattern}" for r in target.routes],
            }
    return report, after


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--quick", action="store_true", help="300 cases (the smoke run)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    cases = 300 if args.quick else args.cases
    report, after = asyncio.run(run(cases, args.seed, args.concurrency))
    findings = [
        {"kind": kind, "case": f.case, "status": f.status, "body": f.body}
        for kind, found in (
            ("5xx", report.server_errors),
            ("shape", report.shape_errors),
            ("transport", report.transport_errors),
            ("http-parser", report.parser_rejects),
        )
        for f in found[:50]
    ]
    result = {"machine": benchutil.machine(), **report.summary(), **after, "findings": findings}
    path = benchutil.write_result("fuzz", result, args.out)
    print(
        benchutil.table(
            ["cases", "5xx", "shape errors", "transport errors", "parser rejects", "read problems", "seconds"],
            [
                [
                    report.cases,
                    len(report.server_errors),
                    len(report.shape_errors),
                    len(report.transport_errors),
                    len(report.parser_rejects),
                    len(after["read_back_problems"]),
                    report.elapsed_s,
                ]
            ],
        )
    )
    for finding in findings[:10]:
        print(f"{finding['kind']} {finding['status']}: {finding['case'][:200]}\n    → {finding['body'][:200]}")
    print(f"wrote {path}")
    bad = report.server_errors or report.shape_errors or report.transport_errors or after["read_back_problems"]
    return 1 if bad or after["extraction_failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
