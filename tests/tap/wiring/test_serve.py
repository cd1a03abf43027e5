"""`tap serve` as a real process: health, admin auth, and CLI commands going through it."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from tap.cli.main import main
from testkit.serve_process import ServeProcess

pytestmark = pytest.mark.slow  # starts other processes (see pyproject.toml: markers)


@pytest.fixture
def served(isolated_home: Path) -> Iterator[ServeProcess]:
    server = ServeProcess(isolated_home).start()
    yield server
    server.stop()


def _call(url: str, token: str | None = None, data: bytes | None = None) -> tuple[int, dict[str, object]]:
    req = urllib.request.Request(url, data=data, method="POST" if data else "GET")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_health_is_open_and_admin_needs_the_token(served: ServeProcess, isolated_home: Path) -> None:
    status, body = _call(served.url + "/tap/health")
    assert status == 200 and body["status"] == "ok" and "MiniLM" in str(body["embedder"])
    assert str(isolated_home) not in json.dumps(body) and body["store"] == "embedded"  # no path for anyone
    assert str(isolated_home) in str(_call(served.url + "/tap/health", token=served.token)[1]["store"])
    assert _call(served.url + "/tap/memories")[0] == 401
    assert _call(served.url + "/tap/memories", token="wrong")[0] == 401
    status, body = _call(served.url + "/tap/memories", token=served.token)
    assert status == 200 and body == {"memories": [], "total": 0, "offset": 0, "limit": 50}
    mode = stat.S_IMODE(os.stat(isolated_home / "admin-token").st_mode)
    assert mode == 0o600


def test_cli_goes_through_the_running_server(served: ServeProcess) -> None:
    runner = CliRunner()
    added = runner.invoke(main, ["memories", "add", "Ann keeps bees in Sintra", "--scope", "ann", "--json"])
    assert added.exit_code == 0, added.output
    memory_id = json.loads(added.stdout)["id"]
    status, body = _call(
        served.url + "/tap/recall",
        served.token,
        json.dumps({"text": "Where are Ann's bees?", "scope": "ann"}).encode(),
    )
    assert status == 200 and body["memories"][0]["id"] == memory_id  # type: ignore[index]
    recalled = runner.invoke(main, ["recall", "bees", "--scope", "ann", "--json"])
    assert json.loads(recalled.stdout)["memories"][0]["id"] == memory_id
    shown = runner.invoke(main, ["memories", "show", memory_id, "--json"])
    assert json.loads(shown.stdout)["chain"][0]["content"] == "Ann keeps bees in Sintra"
    for n in range(2):
        assert runner.invoke(main, ["memories", "add", f"Ann has hive number {n}", "--scope", "ann"]).exit_code == 0
    listed = runner.invoke(main, ["memories", "list", "--limit", "2"])
    assert listed.exit_code == 0 and "1–2 of 3 (next: --offset 2)" in listed.stderr
    found = runner.invoke(main, ["memories", "search", "bees", "--json"])  # every scope, through the server
    assert json.loads(found.stdout)[0]["memory"]["id"] == memory_id


def test_stop_is_graceful_and_releases_the_data_dir(isolated_home: Path) -> None:
    server = ServeProcess(isolated_home).start()
    output = server.stop()
    assert "listening on http://127.0.0.1:" in output and "embedded Chroma" in output
    assert "tap: stopped" in output
    assert not (isolated_home / "server.json").exists()
    result = CliRunner().invoke(main, ["memories", "list", "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout) == []


def test_web_page_is_served_without_secrets(served: ServeProcess) -> None:
    with urllib.request.urlopen(served.url + "/ui", timeout=10) as resp:
        page = resp.read().decode()
        assert resp.headers["Content-Type"].startswith("text/html")
        assert resp.headers["X-Frame-Options"] == "DENY"
    with urllib.request.urlopen(served.url + "/ui/ui.js", timeout=10) as resp:
        script = resp.read().decode()
    assert "/ui/ui.js" in page and "/tap/memories" in script and "Authorization" in script
    assert served.token not in page + script


def test_ui_prints_a_one_time_sign_in_link_never_the_token(served: ServeProcess) -> None:
    """The link may end up in a browser's command line (`tap ui --open`), which every local user can
    read: it carries a code that works once, for a minute, and opens a session (proxy.signin)."""
    result = CliRunner().invoke(main, ["ui"])
    link = result.stdout.strip()
    assert result.exit_code == 0 and link.startswith(f"{served.url}/ui#code=") and served.token not in link
    code = link.split("#code=", 1)[1]
    status, opened = _call(served.url + "/tap/session", data=json.dumps({"code": code}).encode())
    assert status == 200 and isinstance(opened["token"], str)
    session = str(opened["token"])
    assert _call(served.url + "/tap/memories", token=session)[0] == 200  # the session works as a sign-in
    again = _call(served.url + "/tap/session", data=json.dumps({"code": code}).encode())
    assert again[0] == 401 and "run `tap ui` again" in str(again[1]["error"])  # once only
    assert _call(served.url + "/tap/signin", token=session, data=b"{}")[0] == 403  # no codes from a session
    request = urllib.request.Request(served.url + "/tap/session", method="DELETE")
    request.add_header("Authorization", f"Bearer {session}")
    urllib.request.urlopen(request, timeout=10).close()
    assert _call(served.url + "/tap/memories", token=session)[0] == 401  # signed out


def test_ui_without_a_server_says_to_start_one(isolated_home: Path) -> None:
    result = CliRunner().invoke(main, ["ui"])
    assert result.exit_code == 1 and "tap serve is not running" in result.stderr


def test_a_server_that_never_started_says_why_and_not_stopped(isolated_home: Path, tmp_path: Path) -> None:
    """A second `tap serve` on the same data dir, and one on another data dir but the same port:
    each says what happened and exits 1; neither prints "tap: stopped" (it never ran)."""
    server = ServeProcess(isolated_home).start()
    port = server.url.rsplit(":", 1)[1]
    try:
        same_dir = subprocess.run(
            [sys.executable, "-m", "tap", "serve", "--port", "0"],
            env={**os.environ, "TAP_HOME": str(isolated_home)},
            capture_output=True,
            text=True,
            timeout=120,
        )
        other = tmp_path / "other-home"
        same_port = subprocess.run(
            [sys.executable, "-m", "tap", "serve", "--port", port],
            env={**os.environ, "TAP_HOME": str(other)},
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        output = server.stop()
    assert same_dir.returncode == 1 and "tap: stopped" not in same_dir.stderr
    assert f"tap serve is already running on the data dir {isolated_home}, at {server.url}" in same_dir.stderr
    assert same_port.returncode == 1 and "tap: stopped" not in same_port.stderr
    assert f"cannot listen on 127.0.0.1:{port}: the port is already in use" in same_port.stderr
    assert not (other / "server.json").exists()
    assert "tap: stopped" in output  # the one that ran
