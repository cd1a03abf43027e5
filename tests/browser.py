"""Debian's Chromium driven by Playwright for Python (Playwright cannot download its own browsers
here, so it launches the system one). Used by the /ui tests and docs/screenshots.py."""

from __future__ import annotations

import shutil
from typing import Any

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def launch(playwright: Any) -> Any:
    """A headless Chromium (the system's) under Playwright."""
    if CHROMIUM is None:
        raise RuntimeError("Chromium is not installed (apt-get install chromium; .ci/run does)")
    return playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
