"""Helpers shared by the /ui browser tests: the admin API of the `tap serve` under test (to set up and
to check what the page did) and a few steps on the page."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from testkit.serve_process import ServeProcess


class Api:
    """The admin API of a running server."""

    def __init__(self, server: ServeProcess) -> None:
        self.url, self.token = server.url, server.token

    def __call__(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    def add(self, scope: str, content: str, **fields: Any) -> str:
        status, body = self("POST", "/tap/memories", {"scope": scope, "content": content, **fields})
        assert status == 201, body
        return str(body["id"])


def signed_in(page: Any, server: ServeProcess) -> Any:
    """Open the page with a sign-in link as `tap ui` prints it (a one-time code) and wait for the scopes."""
    status, answer = Api(server)("POST", "/tap/signin", {})
    assert status == 200, answer
    page.goto(f"{server.url}/ui#code={answer['code']}")
    page.locator("#scope-list button").first.wait_for()
    return page


def pick_scope(page: Any, scope: str) -> None:
    """Pick a scope in the side list and wait for its memories."""
    from playwright.sync_api import expect

    page.locator(f'#scope-list button[data-scope="{scope}"]').click()
    expect(page.locator("#status")).to_contain_text(f"scope “{scope}”")


def card(page: Any, text: str) -> Any:
    """The memory card that shows this text."""
    return page.locator("#list li.card", has_text=text)
