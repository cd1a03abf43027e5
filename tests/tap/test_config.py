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
        ("[recall]\nbudget_tokens = -3", "recall.budget_tokens: expected an integer from 50 to 8000, got -3"),
        ("[recall]\nbudgt = 3", "recall.budgt: unknown key"),
        ("[nope]\nx = 1", "nope: unknown table"),
        ('[server]\nport = "x"', "server.port: expected an integer from 0 to 65535, got 'x'"),
        (
            '[extract]\nprovider = "gemini"',
            'extract.provider: expected one of "anthropic", "ollama", "openai", "rules", got \'gemini\'',
        ),
        ("[extract]\nchunk_tokens = 100\noverlap_tokens = 200", "overlap_tokens (200) must be smaller"),
        ('[telegram]\nallowed_users = ["ann"]', "telegram.allowed_users[0]: expected an integer, got 'ann'"),
        ('[store]\nurl = "ftp://x"', "store.url: expected a Chroma server as http(s)://host:port"),
        ("[hooks]\ntimeout_s = 0", "hooks.timeout_s: expected a number > 0, got 0; e.g. timeout_s = 1.0"),
        ("port = 8787", "port: unknown key at the top level, outside any [table] (it belongs under [server]"),
        ("[recall\n", "not valid TOML"),
    ],
)
def test_bad_values_name_the_key_value_and_reason(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(text)
    assert message in str(info.value)


def test_every_problem_is_reported_at_once_with_allowed_values_and_an_example() -> None:
    text = """
[recall]
budget_tokens = 1
budgt = 3
[extract]
provider = "gemini"
chunk_tokens = 100
overlap_tokens = 200
[store]
collection = "a"
[mitm]
reverse = ["https://api.anthropic.com@8082", "nowhere"]
"""
    with pytest.raises(ConfigError) as info:
        parse_config(text, origin="my.toml")
    lines = str(info.value).splitlines()
    assert lines[0] == "my.toml: 6 problems"
    assert [line.split(":")[0].strip() for line in lines[1:]] == [
        "recall.budget_tokens",
        "recall.budgt",
        "extract.provider",
        "extract",
        "store.collection",
        "mitm.reverse[1]",
    ]
    assert 'one of "anthropic", "ollama", "openai", "rules"' in lines[3] and 'e.g. provider = "rules"' in lines[3]
    assert "e.g. budget_tokens = 500" in lines[1]
    assert 'e.g. reverse = ["https://api.anthropic.com@8082"]' in lines[6]


def test_no_message_shows_a_regular_expression() -> None:
    import msgspec

    from tap.config_errors import PATTERNS

    patterns = set()
    for table in msgspec.inspect.type_info(Config).fields:
        for field in table.type.fields:
            item = getattr(field.type, "item_type", field.type)
            if getattr(item, "pattern", None):
                patterns.add(item.pattern)
    assert patterns and patterns <= set(PATTERNS)
    text = '[store]\nurl = "ftp://x"\n[telegram]\npath = "no-slash"\ntoken_env = "1X"\n[mitm]\nhosts = ["a b"]'
    with pytest.raises(ConfigError) as info:
        parse_config(text)
    assert str(info.value).startswith("config: 4 problems")
    assert not any(marker in str(info.value) for marker in ("regex", "^", "$", "[A-Za-z"))


@pytest.mark.parametrize(
    ("key", "value", "fix"),
    [
        ("[upstream]\nanthropic", "api.anthropic.com", 'write anthropic = "https://api.anthropic.com"'),
        ("[upstream]\nollama", "127.0.0.1:11434", 'write ollama = "http://127.0.0.1:11434"'),
        ("[extract]\nanthropic_url", "api.anthropic.com/v1", 'write anthropic_url = "https://api.anthropic.com/v1"'),
        ("[telegram]\napi_url", "localhost:8081", 'write api_url = "http://localhost:8081"'),
    ],
)
def test_an_upstream_url_without_a_scheme_is_an_error_with_the_fix(key: str, value: str, fix: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(f'{key} = "{value}"')
    assert f"got '{value}': the scheme is missing; {fix}" in str(info.value)


def test_upstream_urls_with_a_scheme_are_valid() -> None:
    config = parse_config('[upstream]\nanthropic = "http://127.0.0.1:9999"\nopenai = "https://llm.example.com/proxy"')
    assert config.upstream.anthropic == "http://127.0.0.1:9999"
    assert config.upstream.openai == "https://llm.example.com/proxy"


def test_real_config_file_documents_valid_defaults() -> None:
    root = Path(__file__).resolve().parents[2]
    assert parse_config((root / "config.toml").read_text()) == Config()


def test_lookup_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--config, else $TAP_CONFIG, else the user config file, else ./config.toml, else defaults."""
    explicit, env, local = tmp_path / "a.toml", tmp_path / "b.toml", tmp_path / "config.toml"
    user = tmp_path / "xdg-config" / "tap" / "config.toml"  # the conftest's user config folder
    user.parent.mkdir(parents=True)
    for path, port in ((explicit, 1), (env, 2), (user, 3), (local, 4)):
        path.write_text(f"[server]\nport = {port}")
    monkeypatch.setenv("TAP_CONFIG", str(env))
    assert load_config(explicit).config.server.port == 1
    assert load_config().config.server.port == 2
    monkeypatch.delenv("TAP_CONFIG")
    assert load_config().config.server.port == 3
    user.unlink()
    assert load_config().config.server.port == 4
    local.unlink()
    assert load_config().path is None and load_config().config == Config()


def test_the_user_config_file_beats_a_checkouts_config_toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Running inside a checkout (as ./dev does) no longer hides the user's settings."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CONFIG_HOME")
    user = tmp_path / "home" / ".config" / "tap" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text("[recall]\nbudget_tokens = 300")
    (tmp_path / "config.toml").write_text("[recall]\nbudget_tokens = 500")
    loaded = load_config()
    assert loaded.path == user and loaded.config.recall.budget_tokens == 300
    assert loaded.reason == "the user config file: no --config, no $TAP_CONFIG"
    assert loaded.passed_over == (
        f"{tmp_path / 'config.toml'} (config.toml in the current directory): the user config file comes first",
    )


def test_lookup_says_why_and_what_it_passed_over(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = tmp_path / "xdg-config" / "tap" / "config.toml"
    assert load_config().reason == f"built-in defaults: no --config, no $TAP_CONFIG, no {user}, no ./config.toml"
    (tmp_path / "config.toml").write_text("")
    loaded = load_config()
    assert loaded.path == tmp_path / "config.toml" and loaded.passed_over == ()
    assert loaded.reason == f"config.toml in the current directory: no --config, no $TAP_CONFIG, no {user}"
    env = tmp_path / "env.toml"
    env.write_text("")
    monkeypatch.setenv("TAP_CONFIG", str(env))
    loaded = load_config(tmp_path / "config.toml")
    assert loaded.reason == "given with --config"
    assert loaded.passed_over == (f"{env} (named by $TAP_CONFIG): given with --config comes first",)


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
