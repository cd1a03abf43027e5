"""The real Claude Code and Codex CLIs (from npm) through a real `tap serve`, against a fake model API.

Installed once per machine and version (testkit/clients/npm.py: the pinned versions, or the ones
$TAP_TEST_CLAUDE_CODE_VERSION / $TAP_TEST_CODEX_VERSION name); skipped, saying why, where node
or npm is missing or the registry cannot be reached. Each CLI runs with a HOME of its own and a
dummy key; its base URL is tap's, and tap's upstream is the loopback fake that records what
arrives. What is checked is what the recorded-body tests (tests/clients/test_recorded_bodies.py)
check without the CLIs, here end to end: the first prompt of a Claude Code session carries the
block, `codex exec` carries the block, the transcript Claude Code writes ingests in auto mode; and
what only the real CLIs can say: Codex runs tap's hooks once `--trust` recorded its trust (and
warns about no timeout), Claude Code runs tap's hooks in the layout tap installs.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.clients import agents
from testkit.clients.models import AgentAnthropic, AgentOpenAI
from testkit.clients.npm import CLAUDE_CODE, CODEX, ClientUnavailable, install, installed_version
from testkit.serve_process import ServeProcess, admin
from tests.bridges.logtail_helpers import Recorder

pytestmark = pytest.mark.slow  # installs and runs the agent CLIs and a tap serve

MEMORY = "The user wants the study painted teal, their favourite colour"
PROMPT = "Which colour should I paint the study?"
TAP = str(Path(sys.executable).with_name("tap"))


def installed(package: str) -> Path:
    try:
        return install(package)
    except ClientUnavailable as exc:
        pytest.skip(f"{package} cannot be installed here: {exc}")


@pytest.fixture(scope="module")
def claude_code() -> Path:
    return installed(CLAUDE_CODE)


@pytest.fixture(scope="module")
def codex() -> Path:
    return installed(CODEX)


@pytest.fixture
def serve(tmp_path: Path, isolated_home: Path) -> Iterator[tuple[ServeProcess, Path]]:
    """A tap serve factory's config: upstream URLs are written by the test before it starts."""
    config = tmp_path / "tap.toml"
    server = ServeProcess(isolated_home, config=config)
    yield server, config
    server.stop()


def start(server: ServeProcess, config: Path, **upstreams: str) -> ServeProcess:
    config.write_text("[upstream]\n" + "".join(f'{name} = "{url}"\n' for name, url in upstreams.items()))
    server.start(timeout=120)
    admin(server, "POST", "/tap/memories", {"scope": "default", "content": MEMORY, "importance": 4})
    return server


def folders(tmp_path: Path, agent: str, *, git: bool = False) -> tuple[Path, Path]:
    """A fresh HOME for the agent and a project folder (a git repository: the hooks' scope)."""
    home, project = tmp_path / f"{agent}-home", tmp_path / "project"
    (project / ".git" if git else project).mkdir(parents=True)
    return home, project


def block_in(text: object) -> bool:
    return "<recalled-memories>" in json.dumps(text) and "painted teal" in json.dumps(text)


async def test_claude_code_first_prompt_carries_the_block_and_its_transcript_ingests(
    claude_code: Path, serve: tuple[ServeProcess, Path], tmp_path: Path
) -> None:
    server, config = serve
    home, project = folders(tmp_path, "claude")
    async with AgentAnthropic() as up:
        start(server, config, anthropic=up.url)
        run = await agents.claude(claude_code, PROMPT, agents.claude_environment(home, server.url), project)
        run.check()
        (request,) = [r.json() for r in up.requests if r.path == "/v1/messages"]
    assert [m["role"] for m in request["messages"]] == ["user", "system"], installed_version(claude_code, CLAUDE_CODE)
    assert block_in(request["messages"][0]["content"][-1]) and not block_in(request["messages"][1])
    (transcript,) = (home / ".claude" / "projects").glob("*/*.jsonl")
    recorder = Recorder(tmp_path / "state")
    try:
        tailer = recorder.tailer([home / ".claude" / "projects"], tmp_path / "state")
        assert tailer.poll(one_shot=True) == 2 and tailer.stats.formats == {str(transcript): "claude-code"}
        assert recorder.messages()[0][4] == PROMPT
    finally:
        recorder.close()


async def test_codex_exec_carries_the_block(codex: Path, serve: tuple[ServeProcess, Path], tmp_path: Path) -> None:
    server, config = serve
    home, project = folders(tmp_path, "codex")
    async with AgentOpenAI() as up:
        start(server, config, openai=up.url)
        agents.write_codex_config(home, server.url + "/v1")
        (await agents.codex_exec(codex, PROMPT, agents.codex_environment(home), project)).check()
        (request,) = [r.json() for r in up.requests if r.path == "/v1/responses"]
    newest = request["input"][-1]
    assert newest["role"] == "user" and block_in(newest["content"][-1])


def tap_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TAP, *args], env=env, capture_output=True, text=True, timeout=120, check=False)


def install_hooks(config: Path, env: dict[str, str], *flags: str) -> subprocess.CompletedProcess[str]:
    """`tap hooks install` for the test's tap serve (its config), without the MCP server."""
    return tap_cli("--config", str(config), "hooks", "install", "--no-mcp", *flags, env=env)


def fired(env: dict[str, str]) -> dict[str, str]:
    status = json.loads(tap_cli("hooks", "status", "--json", env=env).stdout)
    return {row["event"]: row["outcome"] for row in status["last_fired"]}


async def test_codex_runs_taps_hooks_once_trusted_and_warns_about_nothing(
    codex: Path, serve: tuple[ServeProcess, Path], tmp_path: Path
) -> None:
    server, config = serve
    home, project = folders(tmp_path, "codex", git=True)
    async with AgentOpenAI() as up:
        start(server, config, openai=up.url)
        agents.write_codex_config(home, up.url + "/v1")  # the hooks alone, no proxy
        env = agents.codex_environment(home, {"TAP_HOME": str(server.home)})
        installing = install_hooks(config, env, "--codex")
        assert "not trusted: SessionStart" in installing.stdout, installing.stdout + installing.stderr
        untrusted = await agents.codex_exec(codex, PROMPT, env, project)
        assert untrusted.check() and fired(env) == {}  # Codex skipped them, silently
        trusting = install_hooks(config, env, "--codex", "--trust")
        assert "Codex trusts tap's hooks" in trusting.stdout, trusting.stdout + trusting.stderr
        trusted = (await agents.codex_exec(codex, PROMPT, env, project)).check()
    assert "clamping" not in trusted.stderr and "hook" in trusted.stderr  # no timeout Codex must correct
    ran = fired(env)
    assert {"session-start", "user-prompt-submit", "stop"} <= set(ran), ran
    assert ran["stop"].startswith("queued 2 turns")
    assert "Codex trusts tap's hooks" in tap_cli("hooks", "status", env=env).stdout


async def test_claude_code_runs_taps_hooks_in_the_layout_tap_installs(
    claude_code: Path, serve: tuple[ServeProcess, Path], tmp_path: Path
) -> None:
    server, config = serve
    home, project = folders(tmp_path, "claude", git=True)
    async with AgentAnthropic() as up:
        start(server, config, anthropic=up.url)
        admin(server, "POST", "/tap/memories", {"scope": str(project), "content": MEMORY, "importance": 4})
        env = agents.claude_environment(home, up.url, {"TAP_HOME": str(server.home)})  # the hooks alone
        assert install_hooks(config, env).returncode == 0
        (await agents.claude(claude_code, PROMPT, env, project)).check()
        (request,) = [r.json() for r in up.requests if r.path == "/v1/messages"]
        ran = {}
        for _ in range(100):  # SessionEnd runs in the background, past the end of `claude -p`
            ran = fired(env)
            if "session-end" in ran:
                break
            await asyncio.sleep(0.1)
    assert "session-start" not in ran  # only after /clear or a compaction
    assert ran["user-prompt-submit"].startswith("gave ")
    assert block_in(request["messages"])  # the hook's context reached the model
    assert ran["stop"].startswith("queued 2 turns")
