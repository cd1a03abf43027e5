"""`tap hooks install / uninstall / status` and tap's MCP server in Claude Code's and Codex's settings.

HOME (and CODEX_HOME, CLAUDE_CONFIG_DIR) point into tmp_path, so no real settings file is touched.
Every file is read back with the parser of its documented format (json, tomllib).
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from bridges.mcp.install import is_tap_server
from tap.cli.main import main

CLAUDE_JSON: dict[str, Any] = {
    "numStartups": 12,
    "projects": {"/home/ana/web": {"allowedTools": []}},
    "mcpServers": {
        "github": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"]}
    },
}
CODEX_TOML = """# my Codex settings
model = "gpt-5-codex"
approval_policy = "on-request"

[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-mcp"]  # keep this comment

[mcp_servers.docs.env]
DOCS_TOKEN = "abc"

[profiles.fast]
model = "gpt-5-mini"
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "user"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.setenv("TAP_HOME", str(tmp_path / "data"))
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "TAP_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return folder


def tap(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def test_claude_user_config_gets_the_server_next_to_the_users_own(home: Path) -> None:
    config = home / ".claude.json"
    config.write_text(json.dumps(CLAUDE_JSON, indent=2) + "\n")
    done = tap("hooks", "install")
    assert done.exit_code == 0, done.output
    assert "MCP server registered" in done.output
    after = json.loads(config.read_text())
    entry = after["mcpServers"].pop("tap")
    assert after == CLAUDE_JSON  # everything else as it was
    assert entry["type"] == "stdio" and Path(entry["command"]).name == "tap" and entry["args"][-1] == "mcp"
    assert entry["env"]["TAP_HOME"].endswith("data") and is_tap_server(entry)
    assert "already registered" in tap("hooks", "install").output
    status = json.loads(tap("hooks", "status", "--json").output)
    [claude_user] = [s for s in status["mcp"] if (s["agent"], s["level"]) == ("claude", "user")]
    assert claude_user["server"].endswith(" mcp") and claude_user["path"] == str(config)
    assert "mcp server:" in tap("hooks", "status").output
    assert tap("hooks", "uninstall").exit_code == 0
    assert json.loads(config.read_text()) == CLAUDE_JSON


def test_project_level_goes_to_the_git_roots_mcp_json(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "billing"
    (root / ".git").mkdir(parents=True)
    (root / "src").mkdir()
    monkeypatch.chdir(root / "src")
    assert tap("hooks", "install", "--project").exit_code == 0
    servers = json.loads((root / ".mcp.json").read_text())["mcpServers"]
    assert list(servers) == ["tap"] and servers["tap"]["args"][-1] == "mcp"
    assert tap("hooks", "uninstall", "--project").exit_code == 0
    assert json.loads((root / ".mcp.json").read_text()) == {}
    assert tap("hooks", "install", "--project", "--no-mcp").exit_code == 0
    assert json.loads((root / ".mcp.json").read_text()) == {}


def test_codex_config_toml_keeps_every_other_line(home: Path) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(CODEX_TOML)
    done = tap("hooks", "install", "--codex")
    assert done.exit_code == 0, done.output
    text = config.read_text()
    assert text.startswith(CODEX_TOML.rstrip("\n"))  # comments and order kept; tap's table appended
    parsed = tomllib.loads(text)
    entry = parsed["mcp_servers"]["tap"]
    assert entry["args"][-1] == "mcp" and entry["startup_timeout_sec"] >= 10 and "TAP_HOME" in entry["env"]
    assert parsed["mcp_servers"]["docs"]["env"] == {"DOCS_TOKEN": "abc"} and parsed["profiles"]["fast"]
    assert "already registered" in tap("hooks", "install", "--codex").output
    assert tap("hooks", "uninstall", "--codex").exit_code == 0
    assert tomllib.loads(config.read_text()) == tomllib.loads(CODEX_TOML)
    assert "# keep this comment" in config.read_text()


def test_another_server_named_tap_and_broken_files_are_never_touched(home: Path) -> None:
    foreign = {"mcpServers": {"tap": {"command": "/opt/tapper/bin/tapper", "args": ["serve"]}}}
    claude = home / ".claude.json"
    claude.write_text(json.dumps(foreign))
    refused = tap("hooks", "install", "--dry-run")
    assert refused.exit_code != 0 and "not tap's" in refused.output
    assert json.loads(claude.read_text()) == foreign

    codex = home / ".codex" / "config.toml"
    codex.parent.mkdir()
    codex.write_text('[mcp_servers.tap]\ncommand = "tapper"\n')
    refused = tap("hooks", "install", "--codex")
    assert refused.exit_code != 0 and "not tap's" in refused.output
    codex.write_text("model = \n")
    broken = tap("hooks", "install", "--codex")
    assert broken.exit_code != 0 and "not valid TOML" in broken.output and codex.read_text() == "model = \n"


def test_env_prints_the_lines_to_register_it_by_hand(home: Path) -> None:
    out = tap("env", "mcp").output
    assert "claude mcp add --scope user" in out and "codex mcp add" in out and out.count(" mcp\n") >= 2
    assert "'Authorization: Bearer ${TAP_ADMIN_TOKEN}'" in out  # expanded by Claude Code, never stored
