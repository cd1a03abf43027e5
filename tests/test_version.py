"""The version has one source (pyproject.toml); `tap --version` and the changelog follow it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from click.testing import CliRunner

from tap.cli.main import main

ROOT = Path(__file__).resolve().parents[1]


def test_tap_version_is_the_projects_and_the_changelog_has_it() -> None:
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", version)
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0 and result.stdout.strip() == f"tap, version {version}"
    headings = re.findall(r"^## (.+)$", (ROOT / "CHANGELOG.md").read_text(), flags=re.M)
    assert headings[0] == "Unreleased"
    assert headings[1].split(" ")[0] == version, "the newest release in CHANGELOG.md is the version in pyproject.toml"
