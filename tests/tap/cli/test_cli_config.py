"""Which config file a command reads: `--config` before or after the command, `$TAP_CONFIG`; and
`tap config check` listing every problem of a bad file at once."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from bridges.hooks.command import parse_args
from tap.cli.main import main


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def configs(tmp_path: Path) -> tuple[Path, Path]:
    first, second = tmp_path / "first.toml", tmp_path / "second.toml"
    first.write_text("[recall]\nbudget_tokens = 111\n")
    second.write_text("[recall]\nbudget_tokens = 222\n")
    return first, second


def test_config_after_the_command(configs: tuple[Path, Path]) -> None:
    first, _ = configs
    code, out, _ = run("config", "check", "--config", str(first))
    assert code == 0 and f"# config: {first}" in out and "budget_tokens = 111" in out
    code, out, _ = run("config", "check", f"--config={first}", "--json")
    assert code == 0 and '"budget_tokens": 111' in out


def test_config_after_the_command_wins_over_the_one_before(configs: tuple[Path, Path]) -> None:
    first, second = configs
    code, out, _ = run("--config", str(first), "config", "check", "--config", str(second))
    assert code == 0 and "budget_tokens = 222" in out


def test_tap_config_env_var_and_the_option_over_it(configs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = configs
    monkeypatch.setenv("TAP_CONFIG", str(first))
    code, out, _ = run("config", "check")
    assert code == 0 and "budget_tokens = 111" in out
    code, out, _ = run("config", "check", "--config", str(second))
    assert code == 0 and "budget_tokens = 222" in out
    monkeypatch.setenv("TAP_CONFIG", str(first.with_name("missing.toml")))
    code, _, err = run("config", "check")
    assert code == 2 and "$TAP_CONFIG points to a missing file" in err


def test_memory_commands_read_a_config_given_after_them(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[store]\ncollection = "x"\n')
    code, _, err = run("memories", "list", "--config", str(bad))
    assert code == 2 and "store.collection:" in err
    code, _, err = run("recall", "anything", "--config", str(bad))
    assert code == 2 and "store.collection:" in err


def test_config_check_lists_every_problem_with_its_fix(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(
        '[upstream]\nanthropic = "api.anthropic.com"\n[embedder]\nprovider = "openai"\n[recall]\ntop_k = 5\n'
    )
    code, out, err = run("config", "check", "--config", str(bad))
    assert code == 2 and out == ""
    assert f"{bad}: 3 problems" in err
    scheme = "upstream.anthropic: expected an http:// or https:// URL, got 'api.anthropic.com': the scheme is missing"
    assert f'{scheme}; write anthropic = "https://api.anthropic.com"' in err
    assert 'embedder.provider: expected one of "ollama", "onnx", got \'openai\'; e.g. provider = "onnx"' in err
    assert "recall.top_k: unknown key" in err


def test_hook_fast_path_takes_config_after_the_command() -> None:
    assert parse_args(["hook", "stop", "--config", "a.toml"]).config == "a.toml"
    assert parse_args(["--config", "a.toml", "hook", "stop", "--config=b.toml", "--agent", "codex"]).config == "b.toml"
    with pytest.raises(ValueError, match="unexpected argument"):
        parse_args(["hook", "stop", "--config"])


def test_config_check_says_which_file_it_read_why_and_what_it_passed_over(tmp_path: Path) -> None:
    user = tmp_path / "xdg-config" / "tap" / "config.toml"  # the conftest's user config folder
    user.parent.mkdir(parents=True)
    user.write_text("[recall]\nbudget_tokens = 333\n")
    (tmp_path / "config.toml").write_text("[recall]\nbudget_tokens = 444\n")  # cwd: a checkout's file
    code, out, _ = run("config", "check")
    assert code == 0 and "budget_tokens = 333" in out
    assert f"# config: {user}\n# why: the user config file: no --config, no $TAP_CONFIG\n" in out
    local = tmp_path / "config.toml"
    assert f"# passed over: {local} (config.toml in the current directory): the user config file comes first" in out
    code, out, _ = run("config", "check", "--json")
    assert code == 0 and '"reason": "the user config file: no --config, no $TAP_CONFIG"' in out


@pytest.mark.parametrize(
    ("args", "option", "bounds"),
    [
        (["serve", "--port", "99999"], "--port", "0<=x<=65535"),
        (["serve", "--port", "-1"], "--port", "0<=x<=65535"),
        (["mitm", "--port", "70000"], "--port", "0<=x<=65535"),
        (["recall", "x", "--budget", "9000"], "--budget", "50<=x<=8000"),
        (["recall", "x", "--budget", "49"], "--budget", "50<=x<=8000"),
    ],
)
def test_options_with_a_config_twin_refuse_what_the_config_refuses(args: list[str], option: str, bounds: str) -> None:
    code, out, err = run(*args)
    assert code == 2 and out == ""
    assert f"Invalid value for '{option}'" in err and bounds in err


def test_option_limits_are_the_config_fields_limits(tmp_path: Path) -> None:
    for key, value, ok in (("port", 65535, True), ("port", 65536, False), ("port", 0, True)):
        bad = tmp_path / "c.toml"
        bad.write_text(f"[server]\n{key} = {value}\n")
        assert (run("config", "check", "--config", str(bad))[0] == 0) is ok
    code, _, err = run("ingest", "nowhere", "--format", "csv")
    assert code == 2 and "'auto', 'claude-code', 'jsonl', 'text'" in err


def test_config_init_writes_the_documented_defaults_to_the_user_config_file(tmp_path: Path) -> None:
    user = tmp_path / "xdg-config" / "tap" / "config.toml"
    code, out, _ = run("config", "init")
    assert code == 0 and str(user) in out
    root = Path(__file__).resolve().parents[3]
    assert user.read_text() == (root / "config.toml").read_text()
    code, _, err = run("config", "init")
    assert code == 1 and "exists" in err and "--force" in err
    user.write_text("[server]\nport = 1\n")
    assert run("config", "init", "--force")[0] == 0 and "port = 8787" in user.read_text()
    code, out, _ = run("config", "init", "-")
    assert code == 0 and out == (root / "config.toml").read_text()
