"""The `[hooks]` table, the hook process's config reader (tap.config's validation, remembered), and scopes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bridges.hooks import lightconfig
from bridges.hooks.command import Invocation, is_hook_call, parse_args
from bridges.hooks.names import cli_event
from bridges.hooks.scope import MAX_SCOPE, hook_scope
from tap.admin_token import ensure_token, read_server_info
from tap.config import load_config, parse_config
from tap.errors import ConfigError
from tap.wiring.agent_config import load_hook_config


def test_hooks_table_defaults_and_limits() -> None:
    hooks = parse_config("").hooks
    assert (hooks.scope, hooks.timeout_s, hooks.embedded_timeout_s, hooks.start_budget_tokens) == ("", 1.0, 10.0, 300)
    with pytest.raises(ConfigError, match=r"hooks\.timeout_s"):
        parse_config("[hooks]\ntimeout_s = 0\n")
    with pytest.raises(ConfigError, match=r"hooks\.start_budget_tokens"):
        parse_config("[hooks]\nstart_budget_tokens = -1\n")
    with pytest.raises(ConfigError, match=r"hooks\.timeot_s: unknown key"):
        parse_config("[hooks]\ntimeot_s = 2\n")


CASES = {
    "defaults": "",
    "hooks and data": '[data]\ndir = "{tmp}/fromfile"\n[hooks]\ntimeout_s = 0.4\nembedded_timeout_s = 3\n',
    "token env": '[admin]\ntoken_env = "MY_TAP_TOKEN"\n',
    "no token env": '[admin]\ntoken_env = ""\n',
}


@pytest.mark.parametrize("where", ["explicit", "env", "user"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_light_reader_agrees_with_tap_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str, case: str
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    text = CASES[case].replace("{tmp}", str(tmp_path))
    path = tmp_path / "home" / ".config" / "tap" / "config.toml" if where == "user" else tmp_path / "elsewhere.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    explicit = str(path) if where == "explicit" else None
    if where == "env":
        monkeypatch.setenv("TAP_CONFIG", str(path))
    for tap_home in (True, False):
        if not tap_home:
            monkeypatch.delenv("TAP_HOME")
        full, light = load_config(explicit), lightconfig.load(explicit)
        assert light.path == full.path
        assert light.data_dir == full.data_dir
        assert (light.timeout_s, light.embedded_timeout_s) == (
            full.config.hooks.timeout_s,
            full.config.hooks.embedded_timeout_s,
        )
        assert light.token_env == full.config.admin.token_env


def test_both_readers_follow_the_xdg_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.delenv("TAP_HOME")
    assert load_config().path is None and load_config().data_dir == tmp_path / "xdg-data" / "tap"
    user = tmp_path / "xdg-config" / "tap" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text("[hooks]\ntimeout_s = 0.25\n")
    full, light = load_config(), lightconfig.load()
    assert full.path == light.path == user and full.config.hooks.timeout_s == light.timeout_s == 0.25
    assert full.data_dir == light.data_dir == tmp_path / "xdg-data" / "tap"


def test_a_hook_never_reads_the_projects_own_config_toml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_home: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "config.toml").write_text('[package]\nname = "someone-elses-project"\n')  # the agent's cwd
    assert lightconfig.load().path is None and lightconfig.load().data_dir == isolated_home
    assert load_hook_config(None).path is None and load_hook_config(None).config == parse_config("")
    mine = tmp_path / "tap.toml"
    mine.write_text("[hooks]\ntimeout_s = 0.5\n")
    assert load_hook_config(str(mine)).config.hooks.timeout_s == 0.5 == lightconfig.load(str(mine)).timeout_s


def test_light_reader_finds_the_server_and_token_like_the_cli(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = lightconfig.load()
    assert lightconfig.running_server(config) is None and lightconfig.admin_token(config) is None
    token = ensure_token(isolated_home)
    (isolated_home / "server.json").write_text(json.dumps({"url": "http://127.0.0.1:9", "pid": os.getpid()}))
    info = read_server_info(isolated_home)
    assert info is not None and lightconfig.running_server(config) == "http://127.0.0.1:9" == info.url
    assert lightconfig.admin_token(config) == token
    monkeypatch.setenv("TAP_ADMIN_TOKEN", "from-env")
    assert lightconfig.admin_token(config) == ensure_token(isolated_home, "TAP_ADMIN_TOKEN") == "from-env"
    (isolated_home / "server.json").write_text('{"url": "http://127.0.0.1:9", "pid": 2147483000}')
    assert lightconfig.running_server(config) is None and read_server_info(isolated_home) is None


def test_missing_or_broken_config_is_an_error_the_hook_can_log(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        lightconfig.load(str(tmp_path / "missing.toml"))
    broken = tmp_path / "broken.toml"
    broken.write_text("[hooks\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        lightconfig.load(str(broken))


def test_the_hook_validates_the_config_as_tap_config_does_once_per_version_of_the_file(
    tmp_path: Path, isolated_home: Path
) -> None:
    mine = tmp_path / "tap.toml"
    for text in ("[hooks]\ntimeot_s = 2\n", '[recall]\ntop_k = "many"\n', "[hooks]\ntimeout_s = 0\n"):
        mine.write_text(text)
        with pytest.raises(ConfigError) as light:
            lightconfig.load(str(mine))
        with pytest.raises(ConfigError) as full:
            load_config(str(mine))
        assert str(light.value) == str(full.value)
        assert not (isolated_home / lightconfig.SETTINGS_FILE).exists()  # nothing remembered of a bad file
    mine.write_text("[hooks]\ntimeout_s = 0.7\n")
    assert lightconfig.load(str(mine)).timeout_s == 0.7
    assert (isolated_home / lightconfig.SETTINGS_FILE).exists()
    mine.write_text("[hooks]\ntimeout_s = 0.8\n[hooks.extra]\n")  # edited: validated again
    with pytest.raises(ConfigError, match="extra"):
        lightconfig.load(str(mine))


def test_a_second_hook_reads_the_remembered_settings_without_tap_config(tmp_path: Path, isolated_home: Path) -> None:
    mine = tmp_path / "tap.toml"
    mine.write_text('[hooks]\ntimeout_s = 0.6\n[admin]\ntoken_env = "MINE"\n')
    code = (
        "import sys, json; from bridges.hooks import lightconfig; c = lightconfig.load(sys.argv[1]); "
        "print(json.dumps([c.timeout_s, c.token_env, str(c.data_dir), 'tap.config' in sys.modules]))"
    )
    env = {**os.environ, "TAP_HOME": str(isolated_home)}
    runs = [
        json.loads(
            subprocess.run([sys.executable, "-c", code, str(mine)], env=env, capture_output=True, check=True).stdout
        )
        for _ in range(2)
    ]
    assert runs == [[0.6, "MINE", str(isolated_home), True], [0.6, "MINE", str(isolated_home), False]]


def test_command_line_of_the_fast_path() -> None:
    assert is_hook_call(["hook", "stop"]) and is_hook_call(["--config", "c.toml", "hook", "Stop"])
    assert is_hook_call(["--config=c.toml", "hook", "stop", "--agent", "codex"])
    assert not is_hook_call(["hook", "stop", "--help"]) and not is_hook_call(["hooks", "status"])
    assert not is_hook_call(["serve"]) and not is_hook_call(["hook"])
    assert parse_args(["--config", "c.toml", "hook", "UserPromptSubmit", "--agent=codex"]) == Invocation(
        "user-prompt-submit", "codex", "c.toml"
    )
    with pytest.raises(ValueError, match="unknown hook event"):
        parse_args(["hook", "PostToolUse"])
    with pytest.raises(ValueError, match="unknown agent"):
        parse_args(["hook", "stop", "--agent", "cursor"])
    assert [cli_event(n) for n in ("SessionStart", "session_start", "sessionstart", "PRE-COMPACT")] == [
        "session-start",
        "session-start",
        "session-start",
        "pre-compact",
    ]


def test_scope_is_the_git_root_of_cwd_else_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    repo = tmp_path / "home" / "code" / "billing"
    (repo / ".git").mkdir(parents=True)
    (repo / "services" / "api").mkdir(parents=True)
    assert hook_scope("", str(repo / "services" / "api")) == str(repo) == hook_scope("", str(repo))
    worktree = tmp_path / "home" / "code" / "billing-wt"
    (worktree / "src").mkdir(parents=True)
    (worktree / ".git").write_text("gitdir: ../billing/.git/worktrees/wt\n")  # a worktree has a .git file
    assert hook_scope("", str(worktree / "src")) == str(worktree)
    plain = tmp_path / "home" / "notes" / "2026"
    plain.mkdir(parents=True)
    (tmp_path / "home" / ".git").mkdir()  # a dotfiles repository in $HOME is not everyone's project
    assert hook_scope("", str(plain)) == str(plain)
    assert hook_scope("me", str(repo)) == "me"
    assert hook_scope("", "") == "default"
    deep = tmp_path / ("x" * 120) / ("y" * 120) / ("z" * 120)
    long_scope = hook_scope("", str(deep))
    assert len(long_scope) == MAX_SCOPE and long_scope != hook_scope("", str(deep) + "2")
