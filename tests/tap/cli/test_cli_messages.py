"""What the CLI says in the small cases: a recall budget too small for any memory, counts that agree
with one ("1 memory", "1 turn waiting", never "1 memories" or "turn(s)"), and `tap memories
forget` asking on a terminal and needing --yes elsewhere."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tap.cli.main import main
from tap.cli.ops import render_status
from tap.plural import plural
from tests.terminal import on_a_terminal


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def add(text: str, scope: str = "ann") -> str:
    code, out, err = run("memories", "add", text, "--scope", scope, "--json")
    assert code == 0, err
    return str(json.loads(out)["id"])


def active_ids(scope: str = "ann") -> list[str]:
    code, out, _ = run("memories", "list", "--scope", scope, "--json")
    assert code == 0
    return [m["id"] for m in json.loads(out)]


def test_recall_says_when_the_budget_is_too_small(isolated_home: Path) -> None:
    add("Ann moved to Lisbon in May 2024 after five long years of living in a small flat in Porto " * 2)
    code, out, _ = run("recall", "Where does Ann live? Lisbon or Porto?", "--scope", "ann", "--budget", "50")
    assert code == 0 and "the budget of 50 tokens is too small: 1 memory is relevant in scope 'ann'" in out
    needed = int(re.search(r"try --budget (\d+)", out).group(1))  # type: ignore[union-attr]
    code, out, err = run("recall", "Where does Ann live? Lisbon or Porto?", "--scope", "ann", "--budget", str(needed))
    assert code == 0 and "Lisbon" in out and "(1 memory," in err
    code, out, _ = run("recall", "Where does Ann live? Lisbon or Porto?", "--scope", "ann", "--budget", str(needed - 1))
    assert "too small" in out
    code, out, _ = run("recall", "Where does Ann live?", "--scope", "nobody", "--budget", "50")
    assert code == 0 and out.strip() == "nothing relevant in scope 'nobody'"


def test_recall_counts_memories_in_the_plural(isolated_home: Path) -> None:
    add("Ann moved to Lisbon")
    add("Ann lives in Lisbon with her two dogs")
    code, _, err = run("recall", "Ann Lisbon", "--scope", "ann")
    assert code == 0 and "(2 memories," in err


def test_forget_without_a_terminal_needs_yes(isolated_home: Path) -> None:
    memory = add("Ann keeps bees")
    code, _, err = run("memories", "forget", memory)
    assert code == 2 and "add --yes" in err
    code, _, err = run("memories", "forget", "--scope", "ann", "--json")
    assert code == 2 and "add --yes" in err
    assert active_ids() == [memory]
    code, out, _ = run("memories", "forget", memory, "--yes", "--json")
    assert code == 0 and json.loads(out)["deleted"] == [memory] and active_ids() == []


@pytest.mark.slow
def test_forget_on_a_terminal_asks_first(isolated_home: Path) -> None:
    memory = add("Ann keeps bees")
    code, shown = on_a_terminal(["memories", "forget", memory], isolated_home, prompt=b"[y/N]", answer="n")
    assert code == 1 and "Delete " + memory in shown and "Aborted" in shown
    assert active_ids() == [memory]
    code, shown = on_a_terminal(["memories", "forget", memory], isolated_home, prompt=b"[y/N]", answer="y")
    assert code == 0 and "deleted 1 version:" in shown
    assert active_ids() == []


def test_search_and_list_both_default_to_every_scope(isolated_home: Path) -> None:
    add("Ann keeps bees in Sintra", scope="ann")
    add("Bo keeps bees on a roof", scope="bo")
    code, out, _ = run("memories", "search", "who keeps bees", "--json")
    assert code == 0 and {r["memory"]["scope"] for r in json.loads(out)} == {"ann", "bo"}
    code, out, _ = run("memories", "list", "--json")
    assert code == 0 and {m["scope"] for m in json.loads(out)} == {"ann", "bo"}
    code, out, _ = run("memories", "search", "who keeps bees", "--scope", "bo", "--json")
    assert [r["memory"]["scope"] for r in json.loads(out)] == ["bo"]
    code, out, _ = run("memories", "search", "stamps", "--scope", "nobody")
    assert out.strip() == "nothing relevant in scope 'nobody'"


def test_list_says_where_the_next_page_starts(isolated_home: Path) -> None:
    for n in range(5):
        add(f"Ann planted tree number {n}")
    code, _, err = run("memories", "list", "--limit", "2")
    assert code == 0 and "1–2 of 5 (next: --offset 2)" in err
    code, _, err = run("memories", "list", "--limit", "2", "--offset", "4")
    assert "5–5 of 5" in err and "next" not in err
    code, _, err = run("memories", "list", "--limit", "10")
    assert err == ""


def test_export_counts_one_record_in_the_singular(isolated_home: Path, tmp_path: Path) -> None:
    add("Ann keeps bees")
    code, _, err = run("memories", "export", "-o", str(tmp_path / "out.jsonl"))
    assert code == 0 and f"exported 1 record to {tmp_path / 'out.jsonl'}" in err


def test_plural_agrees_with_the_count() -> None:
    assert [plural(n, "turn") for n in (0, 1, 2)] == ["0 turns", "1 turn", "2 turns"]
    assert plural(1, "batch", "batches") == "1 batch" and plural(3, "batch", "batches") == "3 batches"
    assert plural(1200, "memory", "memories") == "1,200 memories"


def status_doc(n: int) -> dict[str, Any]:
    """A `tap status` document (the server's shape) where every count is n."""
    return {
        "server": "http://127.0.0.1:8787",
        "recall": {
            "served": n,
            "batches": n,
            "lexical_only": 0,
            "shed": 0,
            "cache_hits": 0,
            "ms_per_recall": 2.0,
            "missed": n,
            "lexical_share": 0.25,
            "access_counts_unwritten": n,
        },
        "extraction": {
            "queue": {"queued": n, "running": 0, "done": n, "dead": n, "turns_waiting": n},
            "cost_today": {"day": "2026-01-01", "cost_usd": 0.0},
            "daily_budget_usd": 1.0,
            "dead_letters": [{"id": "c_1", "attempts": n, "error": "boom"}],
            "waiting_for_gap": n == 1,
        },
        "consolidation": {"at": 1_780_000_000.0, "scopes": n, "resumed": n, "waiting_for_gap": n == 1},
        "store": {"shared": True, "indexed": n, "behind_s": 0.5},
    }


def test_status_counts_agree_with_one() -> None:
    one, two = render_status(status_doc(1)), render_status(status_doc(2))
    assert "1 recall in 1 batch," in one and "2 recalls in 2 batches," in two
    assert "1 recall missed the deadline; 25 % of new recalls now start as BM25-only" in one
    assert "2 recalls missed the deadline;" in two
    assert "1 turn waiting" in one and "2 turns waiting" in two
    assert "(1 try)" in one and "(2 tries)" in two
    assert "lexical index 1 memory," in one and "lexical index 2 memories," in two
    assert "1 scope consolidated, 1 step of an interrupted run" in one
    assert "2 scopes consolidated, 2 steps of an interrupted run" in two
    assert "recall counts of 1 memory wait in memory" in one and "recall counts of 2 memories wait" in two
    assert "waiting for a gap between requests" in one and "waiting for a gap" not in two
    assert "extraction waits for a gap between relayed requests" in one and "extraction waits" not in two
    never_ran = {**status_doc(1), "consolidation": {"waiting_for_gap": False}}
    assert "consolidation: last cycle" not in render_status(never_ran)
    assert "(s)" not in one + two


def test_show_and_forget_count_one_version_in_the_singular(isolated_home: Path) -> None:
    memory = add("Ann keeps bees")
    code, out, _ = run("memories", "show", memory)
    assert code == 0 and out.startswith("1 version, oldest first")
    code, out, _ = run("memories", "forget", memory, "--yes")
    assert code == 0 and out.startswith(f"deleted 1 version: {memory}")


def test_status_shows_the_event_loop_lag_and_says_when_the_server_is_overloaded() -> None:
    doc = {
        "server": "http://127.0.0.1:8787",
        "event_loop_lag": {"samples": 600, "p50_ms": 0.4, "p99_ms": 3.1, "max_ms": 9.0},
    }
    idle = render_status(doc)
    assert "event loop lag: p50 0.4 ms, p99 3.1 ms, max 9.0 ms (last minute)" in idle and "overloaded" not in idle
    doc["event_loop_lag"] = {"samples": 600, "p50_ms": 0.0, "p99_ms": 84.0, "max_ms": 214.0}
    assert "the server is overloaded at times" in render_status(doc)
    doc["event_loop_lag"] = {"samples": 0, "p50_ms": 0.0, "p99_ms": 0.0, "max_ms": 0.0}
    assert "event loop lag" not in render_status(doc)  # nothing measured yet
