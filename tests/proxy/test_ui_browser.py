"""The /ui page driven in a real headless Chromium (Playwright on Debian's `chromium`) against a real
`tap serve` process with a real store: sign-in, scopes, paging, search, edit, history, forget with
confirmation, the conflicts and why views with nothing to show, the keyboard, a phone-sized window
(the lifecycle views with something to show: test_ui_lifecycle_views.py).

Skipped only where Chromium is not installed (`.ci/run` installs it). Each test works in scopes of
its own, so one server serves the module.
"""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testkit.serve_process import ServeProcess
from tests.browser import CHROMIUM
from tests.proxy.ui_pages import Api, card, pick_scope, signed_in

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (.ci/run installs it with apt-get)"),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    served = ServeProcess(tmp_path_factory.mktemp("ui-home")).start()
    yield served
    served.stop()


def test_without_a_token_the_page_says_where_to_find_it(page: Any, server: ServeProcess) -> None:
    from playwright.sync_api import expect

    page.goto(server.url + "/ui")
    hint = page.locator("#auth-hint")
    expect(hint).to_be_visible()
    expect(hint).to_contain_text("tap ui")
    expect(hint).to_contain_text("admin-token")
    expect(page.locator("#app")).to_be_hidden()
    expect(page.locator("#token")).to_be_focused()
    page.fill("#token", "not-the-token")
    page.keyboard.press("Enter")
    expect(page.locator("#auth-reason")).to_contain_text("did not accept the token")
    page.fill("#token", server.token)
    page.keyboard.press("Enter")
    expect(page.locator("#app")).to_be_visible()
    expect(hint).to_be_hidden()


def test_the_link_signs_in_and_the_token_stays_in_the_tab(page: Any, server: ServeProcess, api: Api) -> None:
    from playwright.sync_api import expect

    api.add("counts-a", "Ana keeps bees in Sintra")
    api.add("counts-a", "Ana sells honey at the market")
    api.add("counts-a", "Ana said: the hive hums all day", kind="episode")
    signed_in(page, server)
    assert "code" not in page.url and "token" not in page.url  # taken out of the address bar at once
    entry = page.locator('#scope-list button[data-scope="counts-a"]')
    expect(entry).to_have_attribute("title", "counts-a: 2 statements, 1 excerpt")
    expect(entry.locator(".count")).to_have_text("2")  # the count of the layer shown: statements
    page.select_option("#layer", "all")
    expect(entry.locator(".count")).to_have_text("3")
    expect(page.locator("#status")).to_contain_text("3 memories")
    page.reload()
    expect(entry).to_be_visible()  # sessionStorage kept the token across the reload
    page.click("#sign-out")
    expect(page.locator("#auth-hint")).to_be_visible()


def test_pages_through_a_scope_with_buttons_and_keys(page: Any, server: ServeProcess, api: Api) -> None:
    from playwright.sync_api import expect

    for n in range(30):
        api.add("paging", f"Paging memory number {n:02d} about the orchard")
    signed_in(page, server)
    pick_scope(page, "paging")
    page.select_option("#page-size", "25")
    expect(page.locator("#range")).to_have_text("1–25 of 30")
    expect(page.locator("#list li.card")).to_have_count(25)
    expect(page.locator("#prev")).to_be_disabled()
    expect(page.locator("#list li.card").first).to_contain_text("number 29")  # newest first
    page.click("#next")
    expect(page.locator("#range")).to_have_text("26–30 of 30")
    expect(page.locator("#list li.card")).to_have_count(5)
    expect(page.locator("#next")).to_be_disabled()
    page.locator("body").press("p")
    expect(page.locator("#range")).to_have_text("1–25 of 30")
    page.locator("body").press("n")
    expect(page.locator("#range")).to_have_text("26–30 of 30")


def test_search_finds_memories_in_every_scope_or_in_one(page: Any, server: ServeProcess, api: Api) -> None:
    from playwright.sync_api import expect

    api.add("search-a", "Bea keeps three beehives on her roof in Porto")
    api.add("search-b", "Cy keeps bees at the allotment")
    api.add("search-b", "Cy bought a blue kayak")
    signed_in(page, server)
    page.locator("body").press("/")
    expect(page.locator("#q")).to_be_focused()
    page.keyboard.type("who keeps bees")
    page.keyboard.press("Enter")
    expect(page.locator("#status")).to_contain_text("Results for “who keeps bees” in all scopes")
    expect(card(page, "beehives")).to_contain_text("scope search-a")
    expect(card(page, "allotment")).to_contain_text("scope search-b")
    expect(card(page, "beehives")).to_contain_text("score")
    pick_scope(page, "search-b")
    expect(card(page, "beehives")).to_have_count(0)
    expect(card(page, "allotment")).to_be_visible()
    page.locator("#q").press("Escape")  # clears the search: the scope's listing again
    expect(page.locator("#status")).to_contain_text("2 memories in scope “search-b”")
    expect(card(page, "kayak")).to_be_visible()


def test_search_keeps_the_layer_and_archived_filters(page: Any, server: ServeProcess, api: Api) -> None:
    from playwright.sync_api import expect

    api.add("filters", "Eli sails a red dinghy on the Douro")
    api.add("filters", "User: I sail my red dinghy every Saturday", kind="episode")
    old = api.add("filters", "Eli sailed a wooden dinghy as a child")
    assert api("POST", f"/tap/memories/{old}/archive", {})[0] == 200
    signed_in(page, server)
    pick_scope(page, "filters")
    page.fill("#q", "dinghy")
    page.keyboard.press("Enter")
    expect(page.locator("#status")).to_contain_text("Results for “dinghy”")
    expect(card(page, "Douro")).to_be_visible()  # Statements, Active: the page's defaults
    expect(card(page, "every Saturday")).to_have_count(0)  # an excerpt
    expect(card(page, "wooden")).to_have_count(0)  # archived
    page.select_option("#layer", "excerpts")
    expect(card(page, "every Saturday")).to_be_visible()
    expect(card(page, "Douro")).to_have_count(0)
    page.select_option("#layer", "memories")
    page.select_option("#archived", "1")
    expect(card(page, "wooden")).to_be_visible()
    expect(card(page, "wooden").locator(".badge.warn")).to_have_text("archived")
    expect(card(page, "Douro")).to_have_count(0)
    page.select_option("#archived", "all")
    expect(card(page, "wooden")).to_be_visible()
    expect(card(page, "Douro")).to_be_visible()
    expect(page.locator("#status")).to_contain_text("Results for “dinghy”")  # still the search, not the listing


def test_edit_writes_a_new_version_and_history_shows_both(page: Any, server: ServeProcess, api: Api) -> None:
    from playwright.sync_api import expect

    old_id = api.add("editing", "Dee drinks black coffee every morning")
    signed_in(page, server)
    pick_scope(page, "editing")
    card(page, "black coffee").get_by_role("button", name="Edit").click()
    box = page.locator("#list textarea")
    expect(box).to_be_focused()
    box.fill("Dee switched to green tea in the mornings")
    page.locator("#list select[aria-label=Importance]").select_option("4")
    box.press("Control+Enter")
    expect(page.locator("#status")).to_contain_text("the old version is kept in its history")
    edited = card(page, "green tea")
    expect(edited).to_contain_text("importance 4")
    expect(card(page, "black coffee")).to_have_count(0)
    status, listed = api("GET", "/tap/memories?scope=editing")
    assert [m["content"] for m in listed["memories"]] == ["Dee switched to green tea in the mornings"]
    new_id = listed["memories"][0]["id"]
    assert new_id != old_id and listed["memories"][0]["supersedes"] == old_id

    edited.get_by_role("button", name="History").click()
    dialog = page.locator("#history")
    expect(dialog).to_be_visible()
    expect(page.locator("#history-title")).to_contain_text("2 versions, oldest first")
    versions = page.locator("#history-list > li")
    expect(versions.nth(0)).to_contain_text("superseded")
    expect(versions.nth(0)).to_contain_text("black coffee")
    expect(versions.nth(1)).to_contain_text("current")
    expect(versions.nth(1)).to_contain_text("green tea")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()

    card(page, "green tea").get_by_role("button", name="Edit").click()
    page.locator("#list textarea").fill("something else entirely")
    page.locator("#list textarea").press("Escape")  # cancel: nothing written
    expect(card(page, "green tea")).to_be_visible()
    assert api("GET", "/tap/memories?scope=editing&all=1")[1]["total"] == 2


def test_forget_asks_first_and_deletes_only_when_confirmed(page: Any, server: ServeProcess, api: Api) -> None:
    from playwright.sync_api import expect

    doomed = api.add("forgetting", "Eve's locker code is 4512")
    api.add("forgetting", "Eve plays the cello")
    signed_in(page, server)
    pick_scope(page, "forgetting")
    card(page, "locker").get_by_role("button", name="Forget").click()
    dialog = page.locator("#confirm")
    expect(dialog).to_be_visible()
    expect(page.locator("#confirm-text")).to_have_text("Eve's locker code is 4512")
    expect(page.locator("#confirm-cancel")).to_be_focused()  # the safe choice has the focus
    page.keyboard.press("Enter")  # = Cancel
    expect(dialog).to_be_hidden()
    expect(page.locator("#status")).to_have_text("Nothing was deleted.")
    assert api("GET", f"/tap/memories/{doomed}")[0] == 200

    card(page, "locker").get_by_role("button", name="Forget").click()
    page.keyboard.press("Escape")  # also cancels
    expect(dialog).to_be_hidden()
    assert api("GET", f"/tap/memories/{doomed}")[0] == 200

    card(page, "locker").get_by_role("button", name="Forget").click()
    page.click("#confirm-ok")
    expect(page.locator("#status")).to_contain_text("Forgot 1 version")
    expect(card(page, "locker")).to_have_count(0)
    expect(card(page, "cello")).to_be_visible()
    expect(page.locator('#scope-list button[data-scope="forgetting"] .count')).to_have_text("1")
    assert api("GET", f"/tap/memories/{doomed}")[0] == 404


def test_add_puts_a_memory_in_the_chosen_scope(page: Any, server: ServeProcess, api: Api) -> None:
    from playwright.sync_api import expect

    api.add("adding", "Fay grows tomatoes")
    signed_in(page, server)
    pick_scope(page, "adding")
    page.click("#add-box summary")
    expect(page.locator("#new-scope")).to_have_value("adding")
    page.fill("#new-content", "Fay's sister lives in Faro")
    page.select_option("#new-kind", "fact")
    page.locator("#new-content").press("Control+Enter")
    expect(page.locator("#status")).to_contain_text("to scope “adding”")
    expect(card(page, "Faro")).to_be_visible()
    assert api("GET", "/tap/memories?scope=adding")[1]["total"] == 2


def test_the_lifecycle_views_say_when_there_is_nothing_yet(page: Any, server: ServeProcess) -> None:
    from playwright.sync_api import expect

    signed_in(page, server)
    expect(page.locator("#conflict-count")).to_be_hidden()
    page.click("#tab-conflicts")
    expect(page.locator("#view-conflicts")).to_be_visible()
    expect(page.locator("#view-memories")).to_be_hidden()
    expect(page.locator("#conflicts-status")).to_have_text("No conflicts in any scope.")
    page.click("#tab-why")
    expect(page.locator("#why-status")).to_have_text(
        "No proxied requests in any scope in the last 60 minutes (records are kept that long)."
    )
    expect(page.locator("#why-table")).to_be_hidden()
    page.click("#tab-memories")
    expect(page.locator("#view-memories")).to_be_visible()


def test_on_a_phone_nothing_overflows_and_buttons_stay_in_a_row(browser: Any, server: ServeProcess, api: Api) -> None:
    api.add("phone", "Gus has a very long memory " + "that goes on and on " * 12 + "until it ends")
    context = browser.new_context(viewport={"width": 375, "height": 740}, is_mobile=True, has_touch=True)
    page = context.new_page()
    try:
        signed_in(page, server)
        pick_scope(page, "phone")
        boxes = [b.bounding_box() for b in card(page, "Gus").locator(".actions button").all()]
        assert len(boxes) == 4 and len({round(b["y"]) for b in boxes}) == 1, (
            boxes
        )  # edit, history, archive, forget: one row
        assert all(b["x"] + b["width"] <= 375 for b in boxes)
        assert page.evaluate("document.documentElement.scrollWidth") <= 375
        font = page.evaluate("parseFloat(getComputedStyle(document.querySelector('.card .content')).fontSize)")
        assert font >= 14
    finally:
        context.close()


def test_the_site_icon_is_served(page: Any, server: ServeProcess) -> None:
    answers: list[int] = []
    page.on("response", lambda r: answers.append(r.status) if r.url.endswith("/favicon.ico") else None)
    signed_in(page, server)
    icon = page.request.get(server.url + "/favicon.ico")
    assert icon.status == 200 and icon.headers["content-type"] == "image/x-icon"
    assert icon.body()[:4] == b"\x00\x00\x01\x00"  # an ICO file
    assert page.locator('link[rel="icon"]').get_attribute("href") == "/favicon.ico"
    assert 404 not in answers


def test_the_page_and_its_files_carry_a_strict_policy(server: ServeProcess) -> None:
    for path in ("/ui", "/ui/ui.js", "/ui/ui.css"):
        with urllib.request.urlopen(server.url + path, timeout=10) as resp:
            policy = resp.headers["Content-Security-Policy"]
            body = resp.read().decode()
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy and "frame-ancestors 'none'" in policy
        assert server.token not in body
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(server.url + "/ui/../admin-token", timeout=10)
    assert missing.value.code == 404
    html = Path(__file__).parents[2].joinpath("proxy/static/ui.html").read_text()
    assert not re.search(r"<script>|\sstyle=|\son[a-z]+=", html)  # nothing inline for the policy to block
