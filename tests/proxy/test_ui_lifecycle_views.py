"""The /ui lifecycle views driven in a real headless Chromium against a real `tap serve` with a real
store: a conflict that real extraction found (two employers, no sign of a change), kept one side and
both from the page; the why-injected record of a real proxied request (a fake Anthropic upstream on
127.0.0.1) with the candidates that made the block and those that missed it, each with its reason;
archive and restore; a memory's history with the conversation turns each version came from.

Each test works in scopes of its own, so one server serves the module.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from testkit.serve_process import ServeProcess
from testkit.upstreams import FakeAnthropic
from testkit.waits import wait_until
from tests.browser import CHROMIUM
from tests.proxy.ui_pages import Api, card, pick_scope, signed_in
from tests.threaded import InThread

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (.ci/run installs it with apt-get)"),
]
DAY = 86400.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    home = tmp_path_factory.mktemp("ui-lifecycle")
    with InThread(FakeAnthropic()) as upstream:
        config = home / "tap.toml"
        config.write_text(
            f'[upstream]\nanthropic = "{upstream.url}"\n'
            "[extract]\nflush_after_s = 0.0\n"  # an ingested conversation is extracted at once
            "[recall]\nbudget_tokens = 90\n"  # a block of two or three memories: some relevant ones miss it
        )
        served = ServeProcess(home / "data", config=config).start()
        try:
            yield served
        finally:
            served.stop()


def say(api: Api, scope: str, conversation: str, text: str, at: float) -> None:
    """One user turn (and a reply) through POST /tap/ingest, as an agent hook sends it."""
    messages = [
        {"role": "user", "content": text, "id": f"{conversation}:0", "timestamp": at},
        {"role": "assistant", "content": "Noted.", "id": f"{conversation}:1", "timestamp": at + 1},
    ]
    event = {"scope": scope, "conversation": conversation, "source": "hook", "messages": messages}
    status, body = api("POST", "/tap/ingest", event)
    assert status == 202 and body["queued"] == 2, body


def statements(api: Api, scope: str) -> dict[str, dict[str, Any]]:
    """The scope's statements (every version, archived ones too), by content."""
    status, body = api("GET", f"/tap/memories?scope={scope}&layer=memories&all=1&archived=all&limit=100")
    assert status == 200, body
    return {m["content"]: m for m in body["memories"]}


def day(stamp: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(stamp))


def test_a_conflict_found_by_extraction_is_settled_from_the_page(page: Any, server: ServeProcess, api: Api) -> None:
    from playwright.sync_api import expect

    said = time.time() - 60 * DAY
    say(api, "conflicts", "job-1", "I work at Google in Dublin.", said)  # an employer is often held twice:
    say(api, "conflicts", "job-2", "I work at Stripe.", said + 30 * DAY)  # no "joined" or "now", so a conflict
    say(api, "conflicts", "home", "I live in Porto. I live in Braga.", said)  # two homes at one moment
    wait_until(lambda: len(api("GET", "/tap/conflicts?scope=conflicts")[1]["conflicts"]) == 2, what="two conflicts")
    google, stripe = "The user works at Google in Dublin", "The user works at Stripe"

    signed_in(page, server)
    expect(page.locator("#conflict-count")).to_have_text("2")  # on the tab, from any view
    pick_scope(page, "conflicts")
    card(page, stripe).get_by_role("button", name="conflicts with 1").click()
    expect(page.locator("#view-conflicts")).to_be_visible()
    expect(page.locator("#conflicts-status")).to_have_text("2 conflicts in scope “conflicts”, newest first.")
    jobs = page.locator("#conflicts > li", has_text=stripe)
    expect(jobs.locator(".side", has_text=google)).to_contain_text(f"said {day(said)}")
    expect(jobs.locator(".side", has_text=stripe)).to_contain_text(f"said {day(said + 30 * DAY)}")
    jobs.locator(".side", has_text=google).get_by_role("button", name="History").click()  # where it came from
    expect(page.locator("#history-list > li")).to_contain_text("user: I work at Google in Dublin.")
    page.keyboard.press("Escape")

    jobs.locator(".side", has_text=stripe).get_by_role("button", name="Keep this one").click()
    expect(page.locator("#conflicts-status")).to_contain_text(f"Kept “{stripe}”; “{google}” is superseded by it")
    expect(page.locator("#conflicts > li")).to_have_count(1)
    expect(page.locator("#conflict-count")).to_have_text("1")
    stored = statements(api, "conflicts")
    assert stored[google]["superseded_by"] == stored[stripe]["id"] and stored[stripe]["conflicts_with"] == []

    homes = page.locator("#conflicts > li")
    expect(homes).to_contain_text("The user lives in Porto")
    homes.get_by_role("button", name="Keep both").click()
    expect(page.locator("#conflicts-status")).to_contain_text("no longer marked as a conflict")
    expect(page.locator("#conflicts > li")).to_have_count(0)
    expect(page.locator("#conflict-count")).to_be_hidden()
    homes_left = [m for m in statements(api, "conflicts").values() if m["slot"] == "user|residence"]
    assert len(homes_left) == 2 and all(not m["superseded_by"] and not m["conflicts_with"] for m in homes_left)

    # the kept memory's history: the version it won over, then itself, each with the turn it came from
    page.click("#tab-memories")
    card(page, stripe).get_by_role("button", name="History").click()
    versions = page.locator("#history-list > li")
    expect(page.locator("#history-title")).to_contain_text("2 versions, oldest first")
    expect(versions.nth(0)).to_contain_text("superseded")
    expect(versions.nth(0)).to_contain_text(google)
    expect(versions.nth(0).locator(".turns")).to_contain_text("user: I work at Google in Dublin.")
    expect(versions.nth(1)).to_contain_text("current")
    expect(versions.nth(1).locator(".turns")).to_contain_text("user: I work at Stripe.")
    expect(versions.nth(1)).to_contain_text(f"said {day(said + 30 * DAY)}")


def seed_for_why(api: Api) -> dict[str, str]:
    ids = {
        "lives": api.add("why", "Ann lives in Lisbon, in a flat near the river", importance=5),
        "tiles": api.add("why", "Ann loves the blue tiles on the old houses of Lisbon"),
        "food": api.add("why", "Ann loves the custard tarts from the bakery in Lisbon"),
        "walks": api.add("why", "Ann loves long walks along the river in Lisbon at sunset"),
        "cat": api.add("why", "Ann's cat is called Pixel"),  # the request shows it: left out as visible
        "porto": api.add("why", "Ann lives in Porto, near the old bridge"),
        "alfama": api.add("why", "Ann loves the tram that climbs to Alfama in Lisbon"),
    }
    status, moved = api("PATCH", f"/tap/memories/{ids['porto']}", {"content": "Ann moved from Porto"})
    assert status == 200, moved
    ids["moved"] = moved["id"]
    assert api("POST", f"/tap/memories/{ids['alfama']}/archive")[0] == 200
    return ids


def proxied(server: ServeProcess, scope: str, question: str) -> str:
    """A chat request through tap to the fake Anthropic upstream → its x-tap-request-id."""
    payload = {
        "model": "m",
        "max_tokens": 5,
        "messages": [
            {"role": "user", "content": "Ann's cat is called Pixel"},
            {"role": "assistant", "content": "Lovely name."},
            {"role": "user", "content": question},
        ],
    }
    req = urllib.request.Request(server.url + "/v1/messages", data=json.dumps(payload).encode(), method="POST")
    for name, value in {"x-api-key": "k", "anthropic-version": "2023-06-01", "x-tap-scope": scope}.items():
        req.add_header(name, value)
    req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=30) as resp:
        assert resp.status == 200
        resp.read()
        return str(resp.headers["x-tap-request-id"])


def test_why_explains_a_proxied_request_candidate_by_candidate(page: Any, server: ServeProcess, api: Api) -> None:
    from playwright.sync_api import expect

    ids = seed_for_why(api)
    request_id = proxied(server, "why", "Where does Ann live in Lisbon, and what does she love there?")
    record = wait_until(lambda: (r := api("GET", f"/tap/why/{request_id}"))[0] == 200 and r[1], what="the record")

    signed_in(page, server)
    pick_scope(page, "why")
    page.click("#tab-why")
    expect(page.locator("#why-status")).to_contain_text("1 request in scope “why”, newest first")
    row = page.locator(f'#why-rows tr[data-id="{request_id}"]')
    expect(row).to_contain_text("POST /v1/messages")
    expect(row.locator("td").nth(3)).to_have_text(str(record["injected"]))
    row.focus()
    page.keyboard.press("Enter")
    detail = page.locator("#why-detail")
    expect(detail.locator("h3")).to_contain_text(request_id)
    expect(detail).to_contain_text("Where does Ann live in Lisbon, and what does she love there?")
    expect(detail).to_contain_text(f"{record['injected']} memories injected")
    rows = detail.locator("tbody tr")
    expect(rows).to_have_count(len(record["candidates"]))

    def candidate(key: str) -> Any:
        return detail.locator(f'tbody tr[data-id="{ids[key]}"]')

    expect(candidate("lives")).to_contain_text("injected")
    expect(candidate("lives")).to_contain_text("→ in the block")
    expect(candidate("cat")).to_contain_text("→ left out: the model already sees it in the request")
    expect(candidate("porto")).to_contain_text(f"→ an old version, replaced by {ids['moved']}")
    expect(candidate("porto").locator("td").nth(2)).to_have_text("–")  # looked up afterwards: never scored
    expect(candidate("alfama")).to_contain_text("→ archived (restore it to have it recalled)")
    over = [c for c in record["candidates"] if c["outcome"] == "over-budget"]
    assert over  # a 90-token block holds two or three of the relevant ones
    expect(detail.locator(f'tbody tr[data-id="{over[0]["id"]}"]')).to_contain_text(
        "→ relevant, but no room was left for it in the block"
    )
    injected = record["candidates"][0]
    cells = candidate("lives").locator("td")
    lives = next(c for c in record["candidates"] if c["id"] == ids["lives"])
    expect(cells.nth(3)).to_have_text(f"{lives['vector']:.3f}")
    expect(cells.nth(6)).to_have_text(f"{lives['importance']:.2f}")
    assert injected["outcome"] == "injected"  # injected ones first

    candidate("porto").get_by_role("button", name=ids["porto"]).click()  # an id opens the memory's history
    versions = page.locator("#history-list > li")
    expect(versions).to_have_count(2)
    expect(versions.nth(1)).to_contain_text("Ann moved from Porto")


def test_the_conflicts_badge_counts_the_scope_shown(page: Any, server: ServeProcess, api: Api) -> None:
    from playwright.sync_api import expect

    said = time.time() - 60 * DAY
    say(api, "badge-a", "job-1", "I work at Google in Dublin.", said)
    say(api, "badge-a", "job-2", "I work at Stripe.", said + 30 * DAY)
    api.add("badge-b", "Hal grows tomatoes on the balcony")
    wait_until(lambda: len(api("GET", "/tap/conflicts?scope=badge-a")[1]["conflicts"]) == 1, what="a conflict")
    signed_in(page, server)
    badge = page.locator("#conflict-count")
    expect(badge).to_be_visible()  # all scopes: this one and any other test's
    pick_scope(page, "badge-b")
    expect(badge).to_be_hidden()  # none in the scope the views show
    pick_scope(page, "badge-a")
    expect(badge).to_have_text("1")
    expect(page.locator("#tab-conflicts")).to_have_attribute("title", "1 unresolved conflict in scope “badge-a”")
    page.click("#tab-conflicts")
    expect(page.locator("#conflicts > li")).to_have_count(1)  # what the badge counted
    page.locator('#scope-list button[data-scope="badge-b"]').click()
    expect(page.locator("#conflicts-status")).to_have_text("No conflicts in scope “badge-b”.")
    expect(badge).to_be_hidden()


def test_archive_and_restore_from_the_page(page: Any, server: ServeProcess, api: Api) -> None:
    from playwright.sync_api import expect

    tea = api.add("archiving", "Gil drinks oolong tea")
    api.add("archiving", "Gil rows on the Tagus on Sundays")
    signed_in(page, server)
    pick_scope(page, "archiving")
    count = page.locator('#scope-list button[data-scope="archiving"] .count')
    expect(count).to_have_text("2")
    card(page, "oolong").get_by_role("button", name="Archive").click()
    expect(page.locator("#status")).to_contain_text("Archived “Gil drinks oolong tea”: it is no longer recalled")
    expect(card(page, "oolong")).to_have_count(0)  # the list shows active memories
    expect(count).to_have_text("1")  # so does the count
    assert api("GET", f"/tap/memories/{tea}")[1]["memory"]["archived"] is True
    recalled = api("POST", "/tap/recall", {"text": "what does Gil drink? oolong tea", "scope": "archiving"})[1]
    assert tea not in [m["id"] for m in recalled["memories"]]

    page.select_option("#archived", "1")
    expect(page.locator("#status")).to_contain_text("1 archived memory in scope “archiving”")
    archived = card(page, "oolong")
    expect(archived.locator(".badge.warn")).to_have_text("archived")
    archived.get_by_role("button", name="Edit").click()
    page.locator("#list textarea").fill("Gil drinks oolong tea, no sugar")
    page.locator("#list textarea").press("Control+Enter")
    expect(card(page, "no sugar")).to_contain_text("archived")  # corrected, still set aside
    card(page, "no sugar").get_by_role("button", name="Restore").click()
    expect(page.locator("#status")).to_contain_text("it is recalled again")
    expect(card(page, "no sugar")).to_have_count(0)  # no longer among the archived
    expect(count).to_have_text("2")
    page.select_option("#archived", "0")
    expect(card(page, "no sugar")).to_be_visible()
    current = statements(api, "archiving")["Gil drinks oolong tea, no sugar"]
    assert current["archived"] is False and current["supersedes"] == tea
    recalled = api("POST", "/tap/recall", {"text": "what does Gil drink? oolong tea", "scope": "archiving"})[1]
    assert current["id"] in [m["id"] for m in recalled["memories"]]
