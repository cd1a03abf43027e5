"""Repeated failures: one traceback, then one line with a count per interval, then "back"."""

from __future__ import annotations

import logging

import pytest

from tap.runtime.repeatlog import RepeatLog


def test_a_failure_storm_logs_one_traceback_and_counted_lines(caplog: pytest.LogCaptureFixture) -> None:
    clock = [0.0]
    failures = RepeatLog(logging.getLogger("tap.test"), every_s=60, now=lambda: clock[0])
    with caplog.at_level(logging.INFO, logger="tap.test"):
        for second in range(150):  # one failure a second for two and a half minutes
            clock[0] = float(second)
            failures.failed("store", "writing chunk %s failed", second, exc=ConnectionError("refused"))
        failures.recovered("store", "the store is back")
    lines = [r for r in caplog.records]
    assert len(lines) == 4  # at 0 s (with traceback), 60 s, 120 s, and the recovery
    assert lines[0].exc_info is not None and all(r.exc_info is None for r in lines[1:])
    assert (
        lines[1].getMessage()
        == "writing chunk 60 failed: ConnectionError: refused (and 59 more like it in the last 60 s)"
    )
    assert lines[3].getMessage() == "the store is back (after 150 failures)"
    assert failures.count("store") == 0
    with caplog.at_level(logging.INFO, logger="tap.test"):
        failures.failed("store", "writing failed", exc=ConnectionError("refused"))
        failures.recovered("store", "the store is back")
    assert caplog.records[-1].getMessage() == "the store is back (after 1 failure)"


def test_kinds_are_counted_apart(caplog: pytest.LogCaptureFixture) -> None:
    failures = RepeatLog(logging.getLogger("tap.test"), every_s=60, now=lambda: 0.0)
    with caplog.at_level(logging.WARNING, logger="tap.test"):
        for _ in range(3):
            failures.failed("a", "a failed")
            failures.failed("b", "b failed")
    assert [r.getMessage() for r in caplog.records] == ["a failed", "b failed"]
    assert failures.count("a") == failures.count("b") == 3
