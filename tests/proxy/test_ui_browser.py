"""The /ui page in a real headless Chromium against a real `tap serve` (skipped without Chromium)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.serve_process import ServeProcess

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--virtual-time-budget=10000",
]


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (.ci/run installs it)")
def test_page_lists_memories_with_the_token_from_the_link(isolated_home: Path, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from tap.cli import main

    assert CliRunner().invoke(main, ["memories", "add", "Ana keeps bees in Sintra", "--scope", "ana"]).exit_code == 0
    server = ServeProcess(isolated_home).start()
    try:
        dom = subprocess.run(
            [
                str(CHROMIUM),
                *FLAGS,
                f"--user-data-dir={tmp_path / 'profile'}",
                "--dump-dom",
                f"{server.url}/ui#token={server.token}",
            ],
            capture_output=True,
            text=True,
            timeout=90,
            check=True,
        ).stdout
    finally:
        server.stop()
    assert "Ana keeps bees in Sintra" in dom and "1 memory" in dom
    assert '<option value="preference">' in dom
