"""The README's quick start, run as a new user would: its own commands, its own SDK snippet.

The commands and the Python snippet are read from the README's "Quick start" section, so the text
a user follows and the test cannot drift apart. Everything runs as separate processes from a
folder outside the repository, with a home folder of the test's own: `tap serve` finds the user
config file and the user data folder there (no TAP_HOME, no TAP_CONFIG), the `tap …` lines of the
quick start go through it, and the snippet (the real anthropic SDK, pointed at tap by
`ANTHROPIC_BASE_URL` as the README says) must get `x-tap-recalled` above 0, while the fake
Anthropic API behind tap (loopback) must see the memory in the request.

The only thing the test adds is the user config file: it sends tap's upstream to the fake API and
lets `tap serve` pick a free port. `TAP_COMMAND` (a path) runs an installed `tap` instead of
`python -m tap` from this checkout: .ci/wheel-check runs this test on the wheel it installed.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from testkit.serve_process import ServeProcess
from testkit.upstreams import FakeAnthropic
from tests.threaded import InThread

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
README_URL = "http://127.0.0.1:8787"


def quick_start() -> tuple[list[str], dict[str, str], str]:
    """The quick start's `tap …` lines (without `tap serve`, which the test starts), its `export`s
    and its Python snippet."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    commands: list[str] = []
    exports: dict[str, str] = {}
    for block in re.findall(r"```sh\n(.*?)```", section, flags=re.S):
        for line in block.splitlines():
            line = line.split("  #", 1)[0].strip()
            if line.startswith("export "):
                name, _, value = line.removeprefix("export ").partition("=")
                exports[name] = value
            elif line.startswith("tap ") and not line.startswith("tap serve"):
                commands.append(line)
    snippets = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert commands and exports and len(snippets) == 1, "the quick start lost its commands or its snippet"
    return commands, exports, snippets[0]


def tap_command() -> list[str]:
    installed = os.environ.get("TAP_COMMAND")
    return [installed] if installed else [sys.executable, "-m", "tap"]


def user_env(home: Path) -> dict[str, str]:
    """A new user's environment: their own home, none of tap's or the tests' variables."""
    drop = ("TAP_HOME", "TAP_CONFIG", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "PYTHONPATH")
    return {**{k: v for k, v in os.environ.items() if k not in drop}, "HOME": str(home)}


def test_the_quick_start_recalls_its_memory_into_an_sdk_request(tmp_path: Path) -> None:
    commands, exports, snippet = quick_start()
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = user_env(home)
    user_config = home / ".config" / "tap" / "config.toml"
    with InThread(FakeAnthropic()) as upstream:
        user_config.parent.mkdir(parents=True)
        user_config.write_text(f'[server]\nport = 0\n[upstream]\nanthropic = "{upstream.url}"\n')
        server = ServeProcess(home / ".local" / "share" / "tap", user_env=env, command=tap_command(), cwd=elsewhere)
        server.start(timeout=120)
        try:
            outputs = [run(tap_command(), line, env, elsewhere) for line in commands]
            assert any("Lisbon" in out for out in outputs), outputs  # `tap recall` shows the memory
            client_env = {**env, **{k: v.replace(README_URL, server.url) for k, v in exports.items()}}
            client_env.setdefault("ANTHROPIC_API_KEY", "sk-ant-quickstart-test")
            client = subprocess.run(
                [sys.executable, "-c", snippet], env=client_env, cwd=elsewhere, capture_output=True, text=True
            )
            assert client.returncode == 0, client.stderr
            recalled = re.search(r"x-tap-recalled: (\d+)", client.stdout)
            assert recalled and int(recalled.group(1)) > 0, client.stdout
            sent = upstream.requests[-1].json()["messages"][-1]["content"]
            assert "Lisbon" in str(sent)
            with urllib.request.urlopen(server.url + "/ui", timeout=10) as page:  # the web page's files
                assert page.status == 200 and b"<html" in page.read().lower()
        finally:
            log = server.stop()
    assert "Traceback" not in log, log
    checked = run(tap_command(), "tap config check", env, elsewhere)
    assert f"# config: {user_config}\n# why: the user config file" in checked
    documented = run(tap_command(), "tap config init -", env, elsewhere)  # the packaged default config
    assert documented == (ROOT / "config.toml").read_text(encoding="utf-8")


def run(tap: list[str], line: str, env: dict[str, str], cwd: Path) -> str:
    """One `tap …` line of the README with this test's `tap`; its stdout (it must succeed)."""
    args = shlex.split(line)
    done = subprocess.run([*tap, *args[1:]], env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{line}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout
