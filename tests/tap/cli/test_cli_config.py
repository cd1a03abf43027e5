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
