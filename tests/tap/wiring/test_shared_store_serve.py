"""Two real `tap serve` processes on one real Chroma server (docs/operations.md).

A memory written, edited (a new version supersedes the old) or forgotten through one server's
admin API is recalled, or no longer recalled, through the other (the tests wait for it, they do
not time it).
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from testkit.serve_process import ServeProcess
from testkit.waits import wait_until

pytestmark = pytest.mark.slow


def call(server: ServeProcess, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    request = urllib.request.Request(
        server.url + path,
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def recalled(server: ServeProcess, text: str) -> list[str]:
    return [m["id"] for m in call(server, "POST", "/tap/recall", {"text": text, "scope": "team"})["memories"]]


def searched(server: ServeProcess, query: str) -> list[str]:
    found = call(server, "GET", f"/tap/memories/search?scope=team&q={urllib.request.quote(query)}")
    return [r["memory"]["id"] for r in found["results"]]


def indexed(server: ServeProcess) -> int:
    """What the server's own lexical index holds for the scope (GET /tap/status)."""
    store = call(server, "GET", "/tap/status")["store"]
    assert store["shared"] is True
    return int(store["indexed_by_scope"].get("team", 0))


def eventually(check: Callable[[], bool]) -> None:
    """Wait until the other server has followed the change feed (every second; store/chroma.py)."""
    wait_until(check, poll=0.1, what="the other server to follow the change feed")


@pytest.fixture
def servers(tmp_path: Path, chroma_server: Any) -> Iterator[tuple[ServeProcess, ServeProcess]]:
    config = tmp_path / "shared.toml"
    config.write_text(f'[store]\nurl = "{chroma_server.url}"\ncollection = "shared-{tmp_path.name[-20:]}"\n')
    started: list[ServeProcess] = []
    try:
        for name in ("one", "two"):
            started.append(ServeProcess(tmp_path / name, config=config).start(timeout=120))
        yield started[0], started[1]
    finally:
        for server in started:
            server.stop()


def test_writes_through_one_server_are_recalled_through_the_other(
    servers: tuple[ServeProcess, ServeProcess],
) -> None:
    one, two = servers
    first = call(one, "POST", "/tap/memories", {"scope": "team", "content": "The team deploys with Nomad on Fridays"})
    eventually(lambda: first["id"] in recalled(two, "how does the team deploy?") and indexed(two) == 1)
    eventually(lambda: first["id"] in searched(two, "nomad"))

    edited = call(one, "PATCH", f"/tap/memories/{first['id']}", {"content": "The team deploys with Kubernetes now"})
    assert edited["id"] != first["id"]
    eventually(
        lambda: (
            edited["id"] in recalled(two, "how does the team deploy?")
            and first["id"] not in recalled(two, "how does the team deploy? nomad")
        )
    )
    eventually(lambda: searched(two, "kubernetes") == [edited["id"]])

    call(one, "DELETE", f"/tap/memories/{edited['id']}")
    eventually(lambda: recalled(two, "how does the team deploy? kubernetes nomad") == [] and indexed(two) == 0)
    eventually(lambda: searched(two, "kubernetes") == [] and searched(two, "nomad") == [])

    # and the other way round
    back = call(two, "POST", "/tap/memories", {"scope": "team", "content": "Standups moved to 9:30"})
    eventually(lambda: back["id"] in recalled(one, "when is the standup?"))
