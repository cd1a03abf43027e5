"""Screenshots of the /ui page for the README: a real `tap serve` on a throw-away data dir with a few
made-up memories, driven by Playwright on the system's Chromium (tests/browser.py).

    .venv/bin/python docs/screenshots.py        # writes docs/screenshots/*.png
"""

from __future__ import annotations

import json
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.browser import launch  # noqa: E402
from tests.serve_process import ServeProcess  # noqa: E402

OUT = ROOT / "docs" / "screenshots"
MEMORIES = [
    ("ana", "Ana moved to Lisbon in May 2024", "fact", 4),
    ("ana", "Ana prefers short answers with code first", "preference", 4),
    ("ana", "Ana keeps two beehives in her garden in Sintra", "fact", 3),
    ("ana", "Ana decided to use PostgreSQL for the booking service", "decision", 4),
    ("ana", "Ana plans to run the Lisbon half marathon in March", "plan", 3),
    ("ana", "Always answer Ana in European Portuguese when she writes in Portuguese", "instruction", 5),
    ("ana", "Ana: the hive inspection went well, no sign of varroa this time", "episode", 2),
    ("ana", "Ana's sister Marta is a nurse in Porto", "fact", 3),
    ("project:/home/ana/booking", "The booking service runs on Python 3.12 with aiohttp", "fact", 3),
    ("project:/home/ana/booking", "Tests talk to a real PostgreSQL in a container", "decision", 3),
    ("project:/home/ana/booking", "Deploys go out on Tuesdays only", "instruction", 4),
    ("telegram:family", "The family dinner is on the first Sunday of each month", "event", 3),
    ("telegram:family", "Grandma's birthday is on 14 October", "fact", 4),
]


def post(server: ServeProcess, path: str, body: object, method: str = "POST") -> dict[str, object]:
    req = urllib.request.Request(server.url + path, data=json.dumps(body).encode(), method=method)
    req.add_header("Authorization", f"Bearer {server.token}")
    with urllib.request.urlopen(req, timeout=30) as resp:
        return dict(json.loads(resp.read()))


def seed(server: ServeProcess) -> str:
    ids = [
        str(post(server, "/tap/memories", {"scope": s, "content": c, "kind": k, "importance": i})["id"])
        for s, c, k, i in MEMORIES
    ]
    post(server, f"/tap/memories/{ids[3]}", {"content": "Ana moved the booking service to PostgreSQL 16"}, "PATCH")
    return ids[0]


def lifecycle_views(browser: Any) -> None:
    """Conflicts and why-injected, against the stand-in for the lifecycle API (its contract's shapes)
    until a server with those endpoints is at hand."""
    from playwright.sync_api import expect

    from tests.proxy.lifecycle_api import TOKEN, LifecycleApi

    with LifecycleApi() as api:
        page = browser.new_page(viewport={"width": 1200, "height": 560})
        page.goto(f"{api.url}/ui#token={TOKEN}")
        page.locator("#list li.card").first.wait_for()
        page.click("#tab-conflicts")
        expect(page.locator("#conflicts li.card")).to_have_count(1)
        page.screenshot(path=OUT / "conflicts.png")
        page.click("#tab-why")
        page.locator("#why-rows tr").first.click()
        expect(page.locator("#why-detail tbody tr")).to_have_count(2)
        page.screenshot(path=OUT / "why.png", full_page=True)


def main() -> None:
    from playwright.sync_api import expect, sync_playwright

    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as home, sync_playwright() as playwright:
        server = ServeProcess(Path(home)).start()
        try:
            seed(server)
            browser = launch(playwright)
            desk = browser.new_page(viewport={"width": 1200, "height": 760})
            desk.goto(server.url + "/ui")
            expect(desk.locator("#auth-hint")).to_be_visible()
            desk.screenshot(path=OUT / "signin.png")

            desk.goto(f"{server.url}/ui#token={server.token}")
            desk.locator('#scope-list button[data-scope="ana"]').click()
            expect(desk.locator("#status")).to_contain_text("scope “ana”")
            desk.screenshot(path=OUT / "memories.png")

            desk.fill("#q", "where does Ana live?")
            desk.keyboard.press("Enter")
            expect(desk.locator("#status")).to_contain_text("Results for")
            desk.screenshot(path=OUT / "search.png")

            desk.locator("#q").press("Escape")
            desk.locator("#list li.card", has_text="PostgreSQL 16").get_by_role("button", name="History").click()
            expect(desk.locator("#history-list > li")).to_have_count(2)
            desk.screenshot(path=OUT / "history.png")
            desk.keyboard.press("Escape")

            desk.locator("#list li.card", has_text="European Portuguese").get_by_role("button", name="Edit").click()
            desk.screenshot(path=OUT / "edit.png")
            desk.keyboard.press("Escape")

            desk.locator("#list li.card", has_text="Marta").get_by_role("button", name="Forget").click()
            expect(desk.locator("#confirm")).to_be_visible()
            desk.screenshot(path=OUT / "forget.png")
            desk.keyboard.press("Escape")

            phone = browser.new_page(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
            phone.goto(f"{server.url}/ui#token={server.token}")
            phone.locator('#scope-list button[data-scope="ana"]').click()
            expect(phone.locator("#status")).to_contain_text("scope “ana”")
            phone.screenshot(path=OUT / "phone.png")
            lifecycle_views(browser)
            browser.close()
        finally:
            server.stop()
    print(f"screenshots in {OUT}")


if __name__ == "__main__":
    main()
