"""`tap hooks install / uninstall / status` on settings files that already have the user's own hooks.

HOME points at tmp_path, so no real settings file is touched.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from bridges.hooks.codex_trust import LABELS, hook_hash
from bridges.hooks.install import HookCall, entries, is_tap_hook, tap_command
from tap.cli.main import main
from testkit.agent_hooks import Transcript, payload
from testkit.waits import wait_until

CLAUDE_BEFORE: dict[str, Any] = {
    "model": "opus",
    "permissions": {"allow": ["Bash(npm test:*)"]},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/guard.sh", "timeout": 5}]}],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "python3 ~/bin/prompt-log.py"}]}],
        "Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "notify-send 'Claude is done'"}]}],
    },
}
CODEX_BEFORE: dict[str, Any] = {
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "python3 ~/.codex/guard.py"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "say done", "timeout": 3}]}],
    }
}
EVENTS = ["SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd"]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    return folder


def tap(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def write(path: Path, document: dict[str, Any]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(document, indent=4) + "\n"
    path.write_text(text)
    return text


def tap_hooks(document: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {
        event: [hook for group in groups for hook in group["hooks"] if is_tap_hook(hook)]
        for event, groups in document.get("hooks", {}).items()
        if any(is_tap_hook(hook) for group in groups for hook in group["hooks"])
    }


def without_tap(document: dict[str, Any]) -> dict[str, Any]:
    hooks = {}
    for event, groups in document.get("hooks", {}).items():
        kept = [{**g, "hooks": [h for h in g["hooks"] if not is_tap_hook(h)]} for g in groups]
        kept = [g for g in kept if g["hooks"]]
        if kept:
            hooks[event] = kept
    return {**document, "hooks": hooks}


def backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".bak-*"))


def test_install_merges_next_to_the_users_hooks_and_uninstall_restores_them(home: Path) -> None:
    settings = home / ".claude" / "settings.json"
    original = write(settings, CLAUDE_BEFORE)
    result = tap("hooks", "install")
    assert result.exit_code == 0, result.output
    assert "installed" in result.output and "SessionStart" in result.output
    after = json.loads(settings.read_text())
    assert without_tap(after) == CLAUDE_BEFORE  # the user's hooks and settings, untouched and in order
    installed = tap_hooks(after)
    assert sorted(installed) == sorted(EVENTS) and all(len(v) == 1 for v in installed.values())
    prompt_hook = installed["UserPromptSubmit"][0]
    assert prompt_hook["type"] == "command" and prompt_hook["command"].endswith(" hook user-prompt-submit")
    assert isinstance(prompt_hook["timeout"], int)
    assert settings.read_text().startswith('{\n    "model"')  # the file's own 4-space indent is kept
    [backup] = backups(settings)
    assert backup.read_text() == original

    again = tap("hooks", "install")
    assert again.exit_code == 0 and "already installed" in again.output
    assert json.loads(settings.read_text()) == after and len(backups(settings)) == 1  # idempotent: no write

    removed = tap("hooks", "uninstall")
    assert removed.exit_code == 0 and "removed" in removed.output
    assert json.loads(settings.read_text()) == CLAUDE_BEFORE
    assert "already removed" in tap("hooks", "uninstall").output


def test_dry_run_shows_the_diff_and_writes_nothing(home: Path) -> None:
    settings = home / ".claude" / "settings.json"
    result = tap("hooks", "install", "--dry-run")
    assert result.exit_code == 0 and not settings.exists()
    assert result.output.startswith("--- ") and '+    "UserPromptSubmit": [' in result.output
    original = write(settings, CLAUDE_BEFORE)
    tap("hooks", "install")
    dry = tap("hooks", "uninstall", "--dry-run")
    assert dry.exit_code == 0 and '-                        "command": ' in dry.output
    assert tap_hooks(json.loads(settings.read_text())) and original != settings.read_text()


def test_http_hooks_replace_the_command_hooks_in_place(home: Path) -> None:
    settings = home / ".claude" / "settings.json"
    write(settings, CLAUDE_BEFORE)
    tap("hooks", "install")
    result = tap("hooks", "install", "--http")
    assert result.exit_code == 0, result.output
    assert "export TAP_ADMIN_TOKEN=" in result.output
    after = json.loads(settings.read_text())
    installed = tap_hooks(after)
    assert all(len(v) == 1 for v in installed.values()) and without_tap(after) == CLAUDE_BEFORE
    http = installed["UserPromptSubmit"][0]
    assert http == {
        "type": "http",
        "url": "http://127.0.0.1:8787/tap/hooks/user-prompt-submit",
        "headers": {"Authorization": "Bearer ${TAP_ADMIN_TOKEN}"},
        "allowedEnvVars": ["TAP_ADMIN_TOKEN"],
        "timeout": 3,
    }
    assert installed["Stop"][0]["type"] == "http" and installed["SessionStart"][0]["type"] == "command"
    # the user's own Stop hook keeps its group; tap's sits in a group of its own, where it was
    assert after["hooks"]["Stop"][0] == CLAUDE_BEFORE["hooks"]["Stop"][0]
    back = tap("hooks", "install")
    assert back.exit_code == 0 and tap_hooks(json.loads(settings.read_text()))["Stop"][0]["type"] == "command"


def test_codex_hooks_file_gets_command_hooks_and_trust_instructions(home: Path) -> None:
    hooks_file = home / ".codex" / "hooks.json"
    write(hooks_file, CODEX_BEFORE)
    result = tap("hooks", "install", "--codex")
    assert result.exit_code == 0, result.output
    assert "/hooks" in result.output and "trust" in result.output
    after = json.loads(hooks_file.read_text())
    assert list(after) == ["hooks"]  # Codex accepts no other top-level key
    installed = tap_hooks(after)
    assert sorted(installed) == sorted(EVENTS)
    assert all(h["type"] == "command" and h["command"].endswith("--agent codex") for v in installed.values() for h in v)
    assert all(isinstance(h["timeout"], int) for v in installed.values() for h in v)
    assert without_tap(after) == CODEX_BEFORE
    refused = tap("hooks", "install", "--codex", "--http")
    assert refused.exit_code != 0 and "command hooks only" in refused.output
    assert tap("hooks", "uninstall", "--codex").exit_code == 0
    assert json.loads(hooks_file.read_text()) == CODEX_BEFORE


def test_both_agent_flags_install_both_and_both_levels_are_refused(home: Path, tmp_path: Path) -> None:
    """In a real process, as a user types it: `--claude --codex` is both agents, not the last one named."""
    env = {**os.environ, "HOME": str(home), "TAP_HOME": str(tmp_path / "taphome")}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tap", *args], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60
        )

    done = run("hooks", "install", "--claude", "--codex", "--no-mcp")
    assert done.returncode == 0, done.stderr
    assert sorted(tap_hooks(json.loads((home / ".claude" / "settings.json").read_text()))) == sorted(EVENTS)
    assert sorted(tap_hooks(json.loads((home / ".codex" / "hooks.json").read_text()))) == sorted(EVENTS)
    assert "Claude Code session" in done.stdout and "Codex will NOT run these of tap's hooks" in done.stdout
    assert done.stdout.count("tap serve is not running") == 1
    done = run("hooks", "uninstall", "--codex", "--claude")
    assert done.returncode == 0, done.stderr
    assert not tap_hooks(json.loads((home / ".claude" / "settings.json").read_text()))
    assert not tap_hooks(json.loads((home / ".codex" / "hooks.json").read_text()))
    done = run("hooks", "install", "--user", "--project")
    assert done.returncode == 2 and "--user or --project, not both" in done.stderr


def test_claude_code_waits_for_two_hook_processes_per_prompt_not_four(home: Path) -> None:
    settings = home / ".claude" / "settings.json"
    old_layout = {"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "~/bin/banner.sh"}]}]}}
    write(settings, old_layout)
    assert tap("hooks", "install").exit_code == 0
    hooks = json.loads(settings.read_text())["hooks"]
    banner, ours = hooks["SessionStart"]
    assert banner == old_layout["hooks"]["SessionStart"][0]  # the user's group, untouched
    assert ours["matcher"] == "clear|compact" and is_tap_hook(ours["hooks"][0])  # not on every start
    assert "async" not in tap_hooks({"hooks": hooks})["Stop"][0]  # claude -p would wait for it (see install.py)
    assert tap_hooks({"hooks": hooks})["SessionEnd"][0]["async"] is True
    assert "async" not in tap_hooks({"hooks": hooks})["UserPromptSubmit"][0]
    before = settings.read_text()
    assert tap("hooks", "install").exit_code == 0 and settings.read_text() == before  # idempotent
    shared = {
        "hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "~/bin/banner.sh"}, ours["hooks"][0]]}]}
    }
    write(settings, shared)  # tap's entry from an older install, in the user's group
    assert tap("hooks", "install").exit_code == 0
    banner, ours = json.loads(settings.read_text())["hooks"]["SessionStart"]
    assert banner == old_layout["hooks"]["SessionStart"][0] and ours["matcher"] == "clear|compact"


CODEX_CONFIG = """# my Codex settings
model = "gpt-5.5"

[projects."/home/me/src/app"]
trust_level = "trusted"
"""


def test_codex_trust_is_reported_and_recorded_only_when_asked(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(CODEX_CONFIG)
    result = tap("hooks", "install", "--no-mcp", "--codex")
    assert result.exit_code == 0, result.output
    assert "Codex will NOT run these of tap's hooks" in result.output and "not trusted: SessionStart, " in result.output
    assert "/hooks" in result.output and "tap hooks install --codex --trust" in result.output
    assert "--dangerously-bypass-hook-trust" in result.output
    assert config.read_text() == CODEX_CONFIG  # nothing recorded without --trust
    hooks_file = home / ".codex" / "hooks.json"
    assert tap_hooks(json.loads(hooks_file.read_text()))["SessionEnd"][0]["timeout"] == 3  # what Codex accepts
    status = tap("hooks", "status", "--json")
    (codex,) = [t for t in json.loads(status.output)["installed"] if t["agent"] == "codex" and t["level"] == "user"]
    assert set(codex["codex_trust"].values()) == {"untrusted"}
    trusted = tap("hooks", "install", "--no-mcp", "--codex", "--trust")
    assert trusted.exit_code == 0, trusted.output
    assert "recorded that you trust tap's hooks" in trusted.output and "Codex trusts tap's hooks" in trusted.output
    text = config.read_text()
    assert text.startswith(CODEX_CONFIG)  # the user's settings, byte for byte
    states = tomllib.loads(text)["hooks"]["state"]
    assert sorted(states) == sorted(f"{hooks_file}:{LABELS[event]}:0:0" for event in EVENTS)
    assert all(v["trusted_hash"].startswith("sha256:") for v in states.values())
    assert "Codex trusts tap's hooks" in tap("hooks", "status").output
    assert (
        tap("hooks", "install", "--no-mcp", "--codex", "--trust").output.count("recorded") == 0
    )  # nothing to do again
    monkeypatch.setenv("TAP_HOME", str(home / "elsewhere"))  # the command changes: its trust no longer holds
    moved = tap("hooks", "install", "--no-mcp", "--codex")
    assert "changed since you trusted them: SessionStart" in moved.output
    assert tap("hooks", "install", "--no-mcp", "--codex", "--trust").exit_code == 0
    again = tomllib.loads(config.read_text())["hooks"]["state"]
    assert sorted(again) == sorted(states) and again != states
    assert config.read_text().count("[hooks.state.") == len(states)  # the same tables, new hashes


def test_codex_trust_that_tap_cannot_edit_safely_is_refused(home: Path) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    inline = 'hooks = { state = { "x" = { enabled = false } } }\n'
    config.write_text(inline)
    result = tap("hooks", "install", "--no-mcp", "--codex", "--trust")
    assert result.exit_code == 1 and "trust them in `/hooks`" in result.output
    assert config.read_text() == inline


def test_codex_trust_hashes_are_the_ones_codex_accepts() -> None:
    # recorded by Codex CLI 0.171.0 itself: with these hashes in config.toml it ran the hooks
    start = {"type": "command", "command": "echo ss >> /tmp/cc48-rec/ch3/marker", "timeout": 15}
    end = {"type": "command", "command": "echo se >> /tmp/cc48-rec/ch3/marker", "timeout": 3}
    assert hook_hash("SessionStart", None, start) == (
        "sha256:8621a34c9fe322d80ceddee3e36ffa54a8da59b94c095065af78e5b5dcdd6cda"
    )
    assert (
        hook_hash("SessionEnd", None, end) == "sha256:cfee0a4fc4eff7e8603f6796a4e9fc55fd2008dd709c35ed84d554ffd2da06fd"
    )
    assert hook_hash("SessionEnd", None, {**end, "timeout": 5}) == hook_hash("SessionEnd", None, end)  # clamped
    assert hook_hash("Stop", "x", start) == hook_hash("Stop", None, start)  # Stop takes no matcher


def test_project_settings_go_to_the_git_root(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "pkg").mkdir()
    monkeypatch.chdir(repo / "pkg")
    assert tap("hooks", "install", "--project").exit_code == 0
    assert tap_hooks(json.loads((repo / ".claude" / "settings.json").read_text()))
    assert tap("hooks", "install", "--codex", "--project").exit_code == 0
    assert tap_hooks(json.loads((repo / ".codex" / "hooks.json").read_text()))
    assert not (home / ".claude" / "settings.json").exists()


def test_a_file_that_is_not_json_is_never_rewritten(home: Path) -> None:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text('{"hooks": {,}')
    result = tap("hooks", "install")
    assert result.exit_code == 1 and "not valid JSON" in result.output
    assert settings.read_text() == '{"hooks": {,}' and not backups(settings)
    settings.write_text('{"hooks": []}')
    assert tap("hooks", "install").exit_code == 1 and settings.read_text() == '{"hooks": []}'


def test_only_taps_own_commands_are_recognised() -> None:
    call = HookCall("TAP_HOME=/x/y '/opt/tap venv/bin/tap' --config '/etc/tap config.toml'")
    ours = entries("codex", call)
    assert all(is_tap_hook(hook) for hook in ours.values())
    assert all(is_tap_hook(hook) for hook in entries("claude", HookCall("/usr/bin/python3 -m tap")).values())
    assert is_tap_hook({"type": "http", "url": "http://127.0.0.1:8787/tap/hooks/stop"})
    for foreign in ("git hook stop", "~/bin/stop-hook.sh", "mytap hook stop", "tap-notify hook session-start", "tap"):
        assert not is_tap_hook({"type": "command", "command": foreign}), foreign
    assert not is_tap_hook({"type": "http", "url": "https://example.org/hooks/stop"})


@pytest.mark.slow
def test_the_installed_command_runs_and_status_shows_it(home: Path, tmp_path: Path, isolated_home: Path) -> None:
    assert tap("hooks", "install").exit_code == 0
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    command = tap_hooks(settings)["Stop"][0]["command"]
    assert command.startswith("TAP_HOME=") and tap_command() in command
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    transcript = Transcript(home / ".claude" / "projects" / "-proj" / "s-run.jsonl", "s-run", project)
    transcript.user("We ship on Fridays.")
    transcript.assistant("Fridays it is.")
    body = payload("Stop", "s-run", project, transcript.path, stop_hook_active=True)  # no chunk: no background drain
    done = subprocess.run(["sh", "-c", command], input=body, capture_output=True, timeout=60, check=False)
    assert done.returncode == 0 and done.stdout == b""
    status = wait_until(lambda: "queued 2 turns" in (shown := tap("hooks", "status")).output and shown, what="Stop")
    assert status.exit_code == 0, status.output
    assert f"{home / '.claude' / 'settings.json'}: SessionStart, UserPromptSubmit, Stop, PreCompact, SessionEnd" in (
        status.output
    )
    assert "Stop" in status.output and "queued 2 turns, 0 chunks" in status.output
    doc = json.loads(tap("hooks", "status", "--json").output)
    assert doc["last_fired"][0]["event"] == "stop" and doc["scope_rule"].startswith("per project")
    assert any(item["hooks"] for item in doc["installed"] if item["agent"] == "claude" and item["level"] == "user")


def test_status_shows_where_hooks_are_installed_and_when_they_fired(home: Path, tmp_path: Path) -> None:
    """The in-process half of the test above: the hook runs through the CLI, not a shell."""
    assert tap("hooks", "install").exit_code == 0
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    transcript = Transcript(home / ".claude" / "projects" / "-proj" / "s-cli.jsonl", "s-cli", project)
    transcript.user("We ship on Fridays.")
    transcript.assistant("Fridays it is.")
    body = payload("Stop", "s-cli", project, transcript.path, stop_hook_active=True)
    fired = CliRunner().invoke(main, ["hook", "Stop"], input=body)
    assert fired.exit_code == 0 and fired.output == ""
    status = tap("hooks", "status")
    assert status.exit_code == 0, status.output
    assert f"{home / '.claude' / 'settings.json'}: SessionStart, UserPromptSubmit, Stop, PreCompact, SessionEnd" in (
        status.output
    )
    assert "queued 2 turns, 0 chunks" in status.output
    doc = json.loads(tap("hooks", "status", "--json").output)
    assert doc["last_fired"][0]["event"] == "stop" and doc["scope_rule"].startswith("per project")


def test_the_click_hook_command_behaves_like_the_fast_path(home: Path, tmp_path: Path, isolated_home: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    transcript = Transcript(tmp_path / "projects" / "-proj" / "s-click.jsonl", "s-click", project)
    transcript.user("We release on Tuesdays.")
    body = payload("Stop", "s-click", project, transcript.path, stop_hook_active=True)
    result = CliRunner().invoke(main, ["hook", "Stop"], input=body)
    assert result.exit_code == 0 and result.output == ""
    garbage = CliRunner().invoke(main, ["hook", "stop"], input=b"not json")
    assert garbage.exit_code == 0 and garbage.output == ""
    assert "not JSON" in (isolated_home / "tap.log").read_text()
    assert "hook JSON on stdin" in CliRunner().invoke(main, ["hook", "--help"]).output
