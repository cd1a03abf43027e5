"""`tap memories add` and `tap memories import` go through the one scrubber (tap.scrub)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from tap.cli.main import main


def test_add_by_hand_is_scrubbed(isolated_home: Path) -> None:
    runner = CliRunner()
    added = runner.invoke(main, ["memories", "add", "The door code is 4477.", "--scope", "ann", "--json"])
    assert added.exit_code == 0 and json.loads(added.stdout)["content"] == "The door code is [REDACTED]."
    private = runner.invoke(main, ["memories", "add", "<private>my diary</private>", "--scope", "ann"])
    assert private.exit_code == 1 and "empty" in private.stderr


def test_import_is_scrubbed(isolated_home: Path, tmp_path: Path) -> None:
    record = {"id": "m_pin", "scope": "ann", "content": "Ann's PIN is 0921", "tags": ["passcode: 5511"]}
    source = tmp_path / "export.jsonl"
    source.write_text(json.dumps(record) + "\n")
    runner = CliRunner()
    imported = runner.invoke(main, ["memories", "import", str(source)])
    shown = runner.invoke(main, ["memories", "show", "m_pin", "--json"])
    assert imported.exit_code == 0, imported.stderr
    memory = json.loads(shown.stdout)["chain"][0]
    assert memory["content"] == "Ann's PIN is [REDACTED]" and memory["tags"] == ["passcode: [REDACTED]"]
