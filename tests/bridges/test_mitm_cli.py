"""`tap mitm ca`, `tap env`, the `[mitm]` settings, and which hosts the addon intercepts."""

from __future__ import annotations

import json
import ssl
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from bridges.mitm.ca import ensure_ca
from bridges.mitm.hosts import HostPolicy, ReverseTarget, split_entry
from bridges.mitm.runner import MitmSettings
from tap.cli.main import main
from tap.config import MitmConfig, parse_config
from tap.errors import ConfigError


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_mitm_ca_creates_a_private_ca_once_and_says_how_to_trust_it(isolated_home: Path) -> None:
    code, out, _ = run("mitm", "ca")
    confdir = isolated_home / "mitmproxy"
    cert, bundle = confdir / "mitmproxy-ca-cert.pem", confdir / "tap-ca-bundle.pem"
    assert code == 0 and out.startswith(f"# created tap's CA in {confdir}")
    for line in (
        f"export NODE_EXTRA_CA_CERTS={cert}",
        f"export SSL_CERT_FILE={bundle}",
        f"export REQUESTS_CA_BUNDLE={bundle}",
        f"export CODEX_CA_CERTIFICATE={bundle}",
        "export HTTPS_PROXY=http://127.0.0.1:8080",
    ):
        assert line in out
    assert stat.S_IMODE((confdir / "mitmproxy-ca.pem").stat().st_mode) == 0o600
    assert stat.S_IMODE(confdir.stat().st_mode) == 0o700
    again = json.loads(run("mitm", "ca", "--json")[1])
    assert again == {"cert": str(cert), "bundle": str(bundle), "created": False, "proxy": "http://127.0.0.1:8080"}
    # the bundle verifies what the CA signs and keeps the public roots
    context = ssl.create_default_context(cafile=str(bundle))
    subjects = [dict(x[0] for x in c["subject"]).get("commonName") for c in context.get_ca_certs()]
    assert "tap mitm CA" in subjects and len(subjects) > 50


def test_bundle_is_rebuilt_when_missing(tmp_path: Path) -> None:
    files = ensure_ca(tmp_path / "conf")
    files.bundle.unlink()
    assert not ensure_ca(tmp_path / "conf").created and files.bundle.read_bytes().endswith(files.cert.read_bytes())


def test_env_prints_every_way_in(isolated_home: Path, tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        "[server]\nport = 9999\n[mitm]\nport = 8181\nreverse = ["
        '"https://api.anthropic.com@8082", "https://api.openai.com@8083", "http://127.0.0.1:11434@8084",'
        ' "https://llm.example.com@8085"]\n'
    )
    code, out, _ = run("env")
    assert code == 0
    for line in (
        "export ANTHROPIC_BASE_URL=http://127.0.0.1:9999",
        "export OPENAI_BASE_URL=http://127.0.0.1:9999/v1",
        "export OLLAMA_HOST=127.0.0.1:9999",
        "export HTTPS_PROXY=http://127.0.0.1:8181",
        "export ANTHROPIC_BASE_URL=http://127.0.0.1:8082",
        "export OPENAI_BASE_URL=http://127.0.0.1:8083/v1",
        "export OLLAMA_HOST=127.0.0.1:8084",
        "# base URL http://127.0.0.1:8085 reaches https://llm.example.com",
        "tap hooks install",
    ):
        assert line in out, line
    ways = json.loads(run("env", "--json")[1])
    assert set(ways) == {"proxy", "mitm", "reverse", "hooks", "mcp"}
    only = run("env", "reverse")[1]
    assert "HTTPS_PROXY" not in only and "8083/v1" in only


def test_env_without_reverse_says_it_is_not_configured(isolated_home: Path) -> None:
    code, out, _ = run("env", "reverse")
    assert code == 0 and "not configured" in out


def test_bad_command_line_overrides_are_config_errors(isolated_home: Path) -> None:
    code, _, err = run("mitm", "--reverse", "api.anthropic.com:8082")
    assert code == 2 and "mitm" in err and "reverse" in err


def test_settings_from_config(isolated_home: Path) -> None:
    config = parse_config('[mitm]\nport = 0\nregular = false\nreverse = ["https://api.anthropic.com@8082"]\n').mitm
    settings = MitmSettings.from_config(config, isolated_home)
    assert settings.modes() == ["reverse:https://api.anthropic.com@8082"]
    assert settings.confdir == isolated_home / "mitmproxy" and settings.regular_port is None
    assert settings.policy().intercepts("api.anthropic.com", 443)
    default = MitmSettings.from_config(MitmConfig(), isolated_home)
    assert default.modes() == ["regular@8080"] and default.policy().intercepts("api.openai.com", 443)
    assert not default.policy().intercepts("example.com", 443)
    with pytest.raises(ConfigError, match="mitm.reverse"):
        MitmSettings.from_config(MitmConfig(reverse=["https://api.anthropic.com/v1@8082"]), isolated_home)


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("API.Anthropic.com", ("api.anthropic.com", None)),
        ("localhost:11434", ("localhost", 11434)),
        ("[::1]:11434", ("::1", 11434)),
        ("ollama.com.", ("ollama.com", None)),
    ],
)
def test_host_entries(entry: str, expected: tuple[str, int | None]) -> None:
    assert split_entry(entry) == expected


@pytest.mark.parametrize("entry", ["", "host:0", "host:99999", "a/b", "[::1"])
def test_bad_host_entries(entry: str) -> None:
    with pytest.raises(ValueError, match="bad host"):
        split_entry(entry)


def test_policy_and_reverse_targets() -> None:
    target = ReverseTarget.parse("http://127.0.0.1:11434@8084")
    assert target.mode == "reverse:http://127.0.0.1:11434@8084" and target.host == ("127.0.0.1", 11434)
    policy = HostPolicy.parse(["api.openai.com", "localhost:11434"], [target])
    assert policy.intercepts("API.OPENAI.COM", 8443) and policy.intercepts("localhost", 11434)
    assert policy.intercepts("127.0.0.1", 11434) and not policy.intercepts("localhost", 11435)
    assert not policy.intercepts("evil-api.openai.com.example", 443)
    for bad in ("api.anthropic.com@8082", "ftp://x@1", "https://x/path@1", "https://x@port"):
        with pytest.raises(ValueError, match="bad reverse spec"):
            ReverseTarget.parse(bad)
