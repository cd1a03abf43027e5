"""The CLI through its real entry point (click's `main`), on a real store and embedder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tap.cli.main import main


def run(*args: str, input: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def add(text: str, *extra: str) -> dict[str, object]:
    code, out, err = run("memories", "add", text, "--json", *extra)
    assert code == 0, err
    return json.loads(out)  # type: ignore[no-any-return]


def test_add_list_search_recall(isolated_home: Path) -> None:
    lisbon = add("Ann moved to Lisbon last spring", "--scope", "ann", "--kind", "event", "--tag", "move")
    add("Ann prefers green tea", "--scope", "ann", "--kind", "preference")
    add("Bob lives in Berlin", "--scope", "bob")
    code, out, _ = run("memories", "list", "--scope", "ann", "--json")
    assert code == 0 and {m["scope"] for m in json.loads(out)} == {"ann"} and len(json.loads(out)) == 2
    code, out, _ = run("memories", "search", "Lisbon", "--scope", "ann", "--json")
    assert json.loads(out)[0]["memory"]["id"] == lisbon["id"]
    code, out, _ = run("recall", "Where did Ann move?", "--scope", "ann", "--json")
    view = json.loads(out)
    assert set(view) >= {"block", "tokens", "memories"}
    assert view["memories"][0]["id"] == lisbon["id"] and "Lisbon" in view["block"]
    assert {"id", "content", "score", "sources"} <= set(view["memories"][0])
    code, out, _ = run("memories", "list")
    assert code == 0 and "Berlin" in out and "Lisbon" in out


def test_list_shows_memories_and_excerpts_apart(isolated_home: Path) -> None:
    add("The user lives in Lisbon", "--scope", "ann")
    add("User: I live in Lisbon now", "--scope", "ann", "--kind", "episode")
    code, out, _ = run("memories", "list", "--scope", "ann", "--json")
    assert code == 0 and [m["kind"] for m in json.loads(out)] == ["fact"]
    code, out, _ = run("memories", "list", "--scope", "ann", "--excerpts", "--json")
    assert code == 0 and [m["kind"] for m in json.loads(out)] == ["episode"]


def test_edit_keeps_history_and_show_prints_chain(isolated_home: Path) -> None:
    first = add("Ann lives in Porto", "--scope", "ann")
    code, out, _ = run("memories", "edit", str(first["id"]), "--content", "Ann lives in Lisbon", "--json")
    second = json.loads(out)
    assert code == 0 and second["supersedes"] == first["id"]
    code, out, _ = run("memories", "show", str(second["id"]), "--json")
    chain = json.loads(out)["chain"]
    assert [m["id"] for m in chain] == [first["id"], second["id"]]
    assert chain[0]["superseded_by"] == second["id"]
    code, out, _ = run("recall", "Where does Ann live? Porto or Lisbon?", "--scope", "ann", "--json")
    assert [m["id"] for m in json.loads(out)["memories"]] == [second["id"]]
    code, _, err = run("memories", "edit", str(first["id"]), "--content", "x")
    assert code == 1 and "superseded" in err
    code, out, _ = run("memories", "show", str(first["id"]))
    assert code == 0 and "superseded by" in out


def test_forget_removes_every_version(isolated_home: Path) -> None:
    first = add("Ann's locker code hint is blue", "--scope", "ann")
    code, out, _ = run("memories", "edit", str(first["id"]), "--content", "Ann's locker hint is red", "--json")
    second = json.loads(out)
    code, out, _ = run("memories", "forget", str(second["id"]), "--yes", "--json")
    assert code == 0 and sorted(json.loads(out)["deleted"]) == sorted([first["id"], second["id"]])
    code, out, _ = run("memories", "list", "--all-versions", "--json")
    assert json.loads(out) == []
    code, _, err = run("memories", "forget", "m_missing", "--yes")
    assert code == 1 and "no memory" in err


def test_export_import_round_trip_is_exact_and_idempotent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = add("Ann lives in Porto", "--scope", "ann", "--tag", "home")
    run("memories", "edit", str(first["id"]), "--content", "Ann lives in Lisbon")
    add("Bob likes chess", "--scope", "bob")
    dump = tmp_path / "dump.jsonl"
    assert run("memories", "export", "-o", str(dump))[0] == 0
    original = sorted(dump.read_text().splitlines())
    assert len(original) == 3
    monkeypatch.setenv("TAP_HOME", str(tmp_path / "second-home"))
    code, out, _ = run("memories", "import", str(dump), "--json")
    assert code == 0 and json.loads(out)["imported"] == 3
    code, out, _ = run("memories", "import", str(dump), "--json")
    assert json.loads(out) == {"imported": 0, "unchanged": 3, "errors": []}
    again = tmp_path / "again.jsonl"
    run("memories", "export", "-o", str(again))
    assert sorted(again.read_text().splitlines()) == original


def test_import_reports_broken_lines_and_keeps_the_rest(tmp_path: Path) -> None:
    good = add("Ann plays the cello", "--scope", "ann")
    dump = tmp_path / "dump.jsonl"
    run("memories", "export", "-o", str(dump))
    line = dump.read_text().strip()
    other = line.replace(str(good["id"]), "m_other").replace("cello", "violin")
    dump.write_text('{"id": "m_bad", "scope": 3}\nnot json\n' + other + "\n")
    code, out, err = run("memories", "import", str(dump))
    assert code == 1
    assert "dump.jsonl:1:" in err and "dump.jsonl:2:" in err
    assert "imported 1" in out
    code, out, _ = run("memories", "show", "m_other", "--json")
    assert json.loads(out)["chain"][0]["content"] == "Ann plays the violin"


def test_stats_and_unknown_scope(isolated_home: Path) -> None:
    add("Ann plays the cello", "--scope", "ann", "--kind", "fact")
    code, out, _ = run("memories", "stats", "--json")
    stats = json.loads(out)
    assert (stats["active"], stats["by_scope"], stats["by_kind"]) == (1, {"ann": 1}, {"fact": 1})
    assert stats["size_bytes"] > 0
    code, out, _ = run("recall", "cello", "--scope", "nobody", "--json")
    assert code == 0 and json.loads(out)["memories"] == []


def test_config_check_prints_effective_config_and_fails_with_exit_2(tmp_path: Path) -> None:
    code, out, _ = run("config", "check")
    assert code == 0 and "budget_tokens = 500" in out
    bad = tmp_path / "bad.toml"
    bad.write_text("[recall]\nbudget_tokens = -3\n")
    code, _, err = run("--config", str(bad), "config", "check")
    assert code == 2 and "recall.budget_tokens: expected an integer from 50 to 8000, got -3" in err
