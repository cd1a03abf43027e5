"""Fixtures of the /ui browser tests: one headless Chromium per module and a fresh page (its own
browser context) per test; `api` talks to the module's own `server` fixture (a real `tap serve`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from testkit.serve_process import ServeProcess
from tests.browser import launch
from tests.proxy.ui_pages import Api


@pytest.fixture(scope="module")
def api(server: ServeProcess) -> Api:
    return Api(server)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = launch(playwright)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    opened = context.new_page()
    opened.set_default_timeout(15_000)
    yield opened
    context.close()
