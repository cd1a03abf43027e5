"""Config: TOML → Structs, errors naming key/value/reason, lookup order, data dir."""

from __future__ import annotations

from pathlib import Path

import pytest

from tap.config import Config, load_config, parse_config
from tap.errors import ConfigError


def test_empty_file_is_all_defaults() -> None:
    assert parse_config("") == Config()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[recall]\nbudget_tokens = -3", "recall.budget_tokens: expected int >= 50, got -3"),
        ("[recall]\nbudgt = 3", "recall.budgt: unknown key"),
        ("[nope]\nx = 1", "nope: unknown key"),
        ('[server]\nport = "x"', "server.port: expected int, got 'x'"),
        ('[extract]\nprovider = "gemini"', "extract.provider: invalid enum value, got 'gemini'"),
        ("[extract]\nchunk_tokens = 100\noverlap_tokens = 200", "overlap_tokens (200) must be smaller"),
        ('[telegram]\nallowed_users = ["ann"]', "telegram.allowed_users[0]: expected int, got 'ann'"),
        ('[store]\nurl = "ftp://x"', "store.url: expected str matching regex"),
        ("[recall\n", "not valid TOML"),
    ],
)
def test_bad_values_name_the_key_value_and_reason(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(text)
    assert message in str(info.value)


def test_real_config_file_documents_valid_defaults() -> None:
    root = Path(__file__).resolve().parents[2]
    assert parse_config((root / "config.toml").read_text()) == Config()


def test_lookup_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    explicit, env, local = tmp_path / "a.toml", tmp_path / "b.toml", tmp_path / "config.toml"
    explicit.write_text("[server]\nport = 1")
    env.write_text("[server]\nport = 2")
    local.write_text("[server]\nport = 3")
    monkeypatch.setenv("TAP_CONFIG", str(env))
    assert load_config(explicit).config.server.port == 1
    assert load_config().config.server.port == 2
    monkeypatch.delenv("TAP_CONFIG")
    assert load_config().config.server.port == 3
    local.unlink()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert load_config().path is None
    user = tmp_path / "home" / ".config" / "tap" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text("[server]\nport = 4")
    assert load_config().config.server.port == 4


def test_missing_explicit_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "missing.toml")


def test_data_dir_prefers_tap_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "config.toml").write_text(f'[data]\ndir = "{tmp_path / "fromfile"}"')
    monkeypatch.setenv("TAP_HOME", str(tmp_path / "fromenv"))
    assert load_config().data_dir == tmp_path / "fromenv"
    monkeypatch.delenv("TAP_HOME")
    assert load_config().data_dir == tmp_path / "fromfile"


def test_config_toml_lists_every_option() -> None:
    import tomllib

    import msgspec

    root = Path(__file__).resolve().parents[2]
    documented = tomllib.loads((root / "config.toml").read_text())
    missing = [
        f"{table}.{key}"
        for table, values in msgspec.to_builtins(Config()).items()
        for key in values
        if key not in documented.get(table, {})
    ]
    assert missing == []
