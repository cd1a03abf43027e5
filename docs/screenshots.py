"""Screenshots of the /ui page for the README: a real `tap serve` on a throw-away data dir with made-up
memories, driven by Playwright on the system's Chromium (tests/browser.py). The server also extracts
a few made-up conversation turns (POST /tap/ingest: a move, and two employers that become a
conflict) and proxies one chat request to a fake Anthropic upstream on 127.0.0.1 (testkit/upstreams/)
for the why-injected view: nothing leaves the machine.

    .venv/bin/python docs/screenshots.py        # writes docs/screenshots/*.png
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from testkit.serve_process import ServeProcess  # noqa: E402
from testkit.upstreams import FakeAnthropic  # noqa: E402
from tests.browser import launch  # noqa: E402
from tests.threaded import InThread  # noqa: E402

OUT = ROOT / "docs" / "screenshots"
DAY = 86400.0
MEMORIES = [
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
TURNS = [  # (conversation, days ago, what Ana said): the server's rule extractor reads them
    ("home-1", 150, "I live in Porto, near the old bridge."),
    ("work-1", 140, "I work at Lumen Labs as a data engineer."),
    ("home-2", 120, "I moved to Lisbon last May."),  # a change: the Porto statement is superseded
    ("work-2", 100, "I work at Tidewater Analytics."),  # a second employer, no sign of a change: a conflict
]
QUESTION = "Which city did I move to, and where do I work now?"


def call(server: ServeProcess, path: str, body: object = None, method: str = "POST") -> dict[str, Any]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(server.url + path, data=data, method="GET" if body is None else method)
    req.add_header("Authorization", f"Bearer {server.token}")
    with urllib.request.urlopen(req, timeout=30) as resp:
        return dict(json.loads(resp.read()))


def wait(probe: Any, what: str) -> None:
    deadline = time.monotonic() + 120
    while not probe():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.2)


def seed(server: ServeProcess) -> None:
    ids = [
        str(call(server, "/tap/memories", {"scope": s, "content": c, "kind": k, "importance": i})["id"])
        for s, c, k, i in MEMORIES
    ]
    call(server, f"/tap/memories/{ids[2]}", {"content": "Ana moved the booking service to PostgreSQL 16"}, "PATCH")
    now = time.time()
    for conversation, days, text in TURNS:
        at = now - days * DAY
        messages = [
            {"role": "user", "name": "Ana", "content": text, "id": f"{conversation}:0", "timestamp": at},
            {"role": "assistant", "content": "Noted.", "id": f"{conversation}:1", "timestamp": at + 5},
        ]
        event = {"scope": "ana", "conversation": conversation, "source": "hook", "messages": messages}
        call(server, "/tap/ingest", event)
    wait(lambda: call(server, "/tap/conflicts?scope=ana")["conflicts"], "the conflict")
    wait(lambda: call(server, "/tap/memories/search?scope=ana&q=Ana+moved+to+Lisbon")["results"], "the move")


def ask(server: ServeProcess) -> None:
    """One chat request through the proxy (to the fake upstream); waits for its why record."""
    payload = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 300,
        "messages": [
            {"role": "user", "content": "I'm training for the Lisbon half marathon in March."},
            {"role": "assistant", "content": "Good luck with the training!"},
            {"role": "user", "content": QUESTION},
        ],
    }
    req = urllib.request.Request(server.url + "/v1/messages", data=json.dumps(payload).encode(), method="POST")
    for name, value in {"x-api-key": "sk-made-up", "anthropic-version": "2023-06-01", "x-tap-scope": "ana"}.items():
        req.add_header(name, value)
    req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=30) as resp:
        resp.read()
        request_id = resp.headers["x-tap-request-id"]

    def recorded() -> bool:  # kept right after the response, on a worker thread
        try:
            return bool(call(server, f"/tap/why/{request_id}"))
        except urllib.error.HTTPError:
            return False

    wait(recorded, "the why record")


def main() -> None:
    from playwright.sync_api import expect, sync_playwright

    OUT.mkdir(parents=True, exist_ok=True)
    with (
        tempfile.TemporaryDirectory() as home,
        InThread(FakeAnthropic()) as upstream,
        sync_playwright() as playwright,
    ):
        config = Path(home) / "tap.toml"
        config.write_text(
            f'[upstream]\nanthropic = "{upstream.url}"\n'
            "[extract]\nflush_after_s = 0.0\n"  # the made-up turns are extracted at once
            "[recall]\nbudget_tokens = 200\n"  # a small block: the why view shows some that miss it
        )
        server = ServeProcess(Path(home) / "data", config=config).start()
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
            desk.locator("#list li.card", has_text="moved to Lisbon").get_by_role("button", name="History").click()
            expect(desk.locator("#history-list .turns")).to_have_count(2)
            desk.screenshot(path=OUT / "history.png")
            desk.keyboard.press("Escape")

            desk.locator("#list li.card", has_text="European Portuguese").get_by_role("button", name="Edit").click()
            desk.screenshot(path=OUT / "edit.png")
            desk.keyboard.press("Escape")

            desk.locator("#list li.card", has_text="Marta").get_by_role("button", name="Forget").click()
            expect(desk.locator("#confirm")).to_be_visible()
            desk.screenshot(path=OUT / "forget.png")
            desk.keyboard.press("Escape")

            desk.click("#tab-conflicts")
            expect(desk.locator("#conflicts > li")).to_have_count(1)
            desk.set_viewport_size({"width": 1200, "height": 480})
            desk.screenshot(path=OUT / "conflicts.png")

            ask(server)
            desk.set_viewport_size({"width": 1200, "height": 1000})
            desk.click("#tab-why")
            desk.locator("#why-rows tr").first.click()
            expect(desk.locator("#why-detail tbody tr").first).to_be_visible()
            desk.screenshot(path=OUT / "why.png")

            phone = browser.new_page(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
            phone.goto(f"{server.url}/ui#token={server.token}")
            phone.locator('#scope-list button[data-scope="ana"]').click()
            expect(phone.locator("#status")).to_contain_text("scope “ana”")
            phone.screenshot(path=OUT / "phone.png")
            browser.close()
        finally:
            server.stop()
    print(f"screenshots in {OUT}")


if __name__ == "__main__":
    main()
