"""The /ui views built against the lifecycle API contract (archive, conflicts, why-injected, history
with source turns), driven in a real Chromium against a stand-in that answers in the contract's
shapes (tests/proxy/lifecycle_api.py): the page must work once the real endpoints land."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser import CHROMIUM, launch
from tests.proxy.lifecycle_api import TOKEN, LifecycleApi

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (.ci/run installs it with apt-get)"),
]


@pytest.fixture
def page() -> Iterator[tuple[Any, LifecycleApi]]:
    from playwright.sync_api import sync_playwright

    with LifecycleApi() as api, sync_playwright() as playwright:
        browser = launch(playwright)
        opened = browser.new_page(viewport={"width": 1200, "height": 900})
        opened.set_default_timeout(15_000)
        opened.goto(f"{api.url}/ui#token={TOKEN}")
        opened.locator("#list li.card").first.wait_for()
        yield opened, api
        browser.close()


def test_archived_memories_have_a_filter_and_buttons(page: tuple[Any, LifecycleApi]) -> None:
    from playwright.sync_api import expect

    ui, api = page
    expect(ui.locator("#archived")).to_be_visible()  # the server knows archived memories
    tea = ui.locator("#list li.card", has_text="green tea")
    tea.get_by_role("button", name="Archive").click()
    expect(ui.locator("#status")).to_contain_text("no longer recalled")
    assert ("archive", "m_tea") in api.writes
    ui.select_option("#archived", "1")
    old = ui.locator("#list li.card", has_text="red bicycle")
    expect(old).to_contain_text("archived")
    old.get_by_role("button", name="Restore").click()
    expect(ui.locator("#status")).to_contain_text("recalled again")
    assert ("restore", "m_old") in api.writes


def test_a_conflict_is_shown_and_resolved(page: tuple[Any, LifecycleApi]) -> None:
    from playwright.sync_api import expect

    ui, api = page
    ui.locator("#list li.card", has_text="Lisbon").get_by_role("button", name="conflicts with 1").click()
    expect(ui.locator("#view-conflicts")).to_be_visible()
    expect(ui.locator("#conflicts-status")).to_have_text("1 conflict")
    pair = ui.locator("#conflicts li.card")
    expect(pair).to_contain_text("Ana lives in Lisbon")
    expect(pair).to_contain_text("Ana lives in Porto")
    pair.locator(".side", has_text="Lisbon").get_by_role("button", name="Keep this one").click()
    expect(ui.locator("#conflicts-status")).to_contain_text("Kept “Ana lives in Lisbon”")
    assert ("resolve", {"keep": "m_lisbon", "drop": "m_porto"}) in api.writes
    expect(ui.locator("#conflicts li")).to_have_count(0)


def test_why_lists_requests_and_explains_each_candidate(page: tuple[Any, LifecycleApi]) -> None:
    from playwright.sync_api import expect

    ui, _ = page
    ui.click("#tab-why")
    row = ui.locator("#why-rows tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("/v1/messages")
    row.focus()
    ui.keyboard.press("Enter")
    detail = ui.locator("#why-detail")
    expect(detail).to_contain_text("where does Ana live?")
    candidates = detail.locator("tbody tr")
    expect(candidates).to_have_count(2)
    expect(candidates.nth(0)).to_contain_text("injected")
    expect(candidates.nth(1)).to_contain_text("below-threshold")
    expect(candidates.nth(1).locator("td").nth(4)).to_have_text("–")  # no lexical score


def test_history_shows_the_source_turns(page: tuple[Any, LifecycleApi]) -> None:
    from playwright.sync_api import expect

    ui, _ = page
    ui.locator("#list li.card", has_text="green tea").get_by_role("button", name="History").click()
    versions = ui.locator("#history-list > li")
    expect(versions).to_have_count(2)
    expect(versions.nth(0)).to_contain_text("superseded")
    expect(versions.nth(1)).to_contain_text("current")
    expect(versions.nth(1)).to_contain_text("user: I switched from coffee to green tea")
