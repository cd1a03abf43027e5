"""`tap telegram set-webhook | delete-webhook | info` against the fake Bot API on loopback."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tap.cli.main import main
from testkit.fake_telegram import TOKEN, FakeBotAPI
from tests.bridges.telegram_harness import SECRET, set_env

URL = "https://bot.example.org/telegram/webhook"


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    set_env(monkeypatch)


def config_for(tmp_path: Path, api_url: str, extra: str = "") -> Path:
    path = tmp_path / "tap.toml"
    path.write_text(f'[telegram]\napi_url = "{api_url}"\n{extra}\n', encoding="utf-8")
    return path


async def tap(config: Path, *args: str) -> tuple[int, str, str]:
    """Run the CLI in a thread (it runs its own event loop) while the fake serves in ours."""
    result = await asyncio.to_thread(CliRunner().invoke, main, ["--config", str(config), "telegram", *args])
    return result.exit_code, result.stdout, result.stderr


async def test_set_webhook_sends_secret_and_allowed_updates(tmp_path: Path) -> None:
    async with FakeBotAPI() as api:
        code, out, err = await tap(config_for(tmp_path, api.url), "set-webhook", URL, "--drop-pending-updates")
    assert code == 0, err
    (call,) = api.sent("setWebhook")
    assert call.params["url"] == URL and call.params["secret_token"] == SECRET
    assert call.json("allowed_updates") == ["message", "callback_query"]
    assert call.json("drop_pending_updates") is True
    commands = [c["command"] for c in api.sent("setMyCommands")[0].json("commands")]
    assert commands == ["start", "memories", "remember", "forget", "private", "retry", "usage"]
    assert f"webhook:          {URL}" in out and "message, callback_query" in out
    assert "enabled = false" in err  # the config does not enable the bridge yet
    assert TOKEN not in out + err and SECRET not in out + err


async def test_set_webhook_without_dropping_and_with_a_path_warning(tmp_path: Path) -> None:
    async with FakeBotAPI() as api:
        config = config_for(tmp_path, api.url, "enabled = true")
        code, _, err = await tap(config, "set-webhook", "https://bot.example.org:8443/hook")
    assert code == 0
    assert "drop_pending_updates" not in api.sent("setWebhook")[0].params or not api.sent("setWebhook")[0].json(
        "drop_pending_updates"
    )
    assert "is not [telegram] path '/telegram/webhook'" in err and "enabled = false" not in err


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://bot.example.org/telegram/webhook", "https://"),
        ("https://bot.example.org:8787/telegram/webhook", "8787"),
    ],
)
async def test_set_webhook_refuses_urls_telegram_would_refuse(tmp_path: Path, url: str, reason: str) -> None:
    async with FakeBotAPI() as api:
        code, _, err = await tap(config_for(tmp_path, api.url), "set-webhook", url)
    assert code == 2 and reason in err and api.calls == []


async def test_delete_webhook_and_info(tmp_path: Path) -> None:
    async with FakeBotAPI() as api:
        config = config_for(tmp_path, api.url)
        await tap(config, "set-webhook", URL)
        code, out, _ = await tap(config, "info", "--json")
        info = json.loads(out)
        deleted, text, _ = await tap(config, "delete-webhook", "--drop-pending-updates")
    assert code == 0 and info["bot"] == "@tap_test_bot" and info["url"] == URL
    assert info["allowed_updates"] == ["message", "callback_query"] and info["pending_update_count"] == 0
    assert deleted == 0 and api.sent("deleteWebhook")[0].json("drop_pending_updates") is True
    assert "webhook:          (none)" in text


@pytest.mark.parametrize(
    ("unset", "command"),
    [("TAP_TELEGRAM_TOKEN", "info"), ("TAP_TELEGRAM_TOKEN", "delete-webhook"), ("TAP_TELEGRAM_SECRET", "set-webhook")],
)
async def test_missing_env_vars_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unset: str, command: str
) -> None:
    monkeypatch.delenv(unset)
    args = [command, URL] if command == "set-webhook" else [command]
    async with FakeBotAPI() as api:
        code, _, err = await tap(config_for(tmp_path, api.url), *args)
    assert code == 2 and f"environment variable {unset} is not set" in err
    assert api.sent("setWebhook") == []


async def test_bot_api_failures_are_one_line_errors_without_the_token(tmp_path: Path) -> None:
    async with FakeBotAPI(token="42:another-token-entirely-different-from-ours") as wrong:
        rejected = await tap(config_for(tmp_path, wrong.url), "info")
    async with FakeBotAPI() as api:
        api.fail_next("setWebhook", 400, "Bad Request: bad webhook: Failed to resolve host: Name or service not known")
        refused = await tap(config_for(tmp_path, api.url), "set-webhook", URL)
    unreachable = await tap(config_for(tmp_path, "http://127.0.0.1:9"), "info")
    assert rejected[0] == 1 and "rejected the token in $TAP_TELEGRAM_TOKEN" in rejected[2]
    assert refused[0] == 1 and "the Bot API refused: Bad webhook: failed to resolve host" in refused[2]
    assert unreachable[0] == 1 and "cannot reach the Bot API at http://127.0.0.1:9" in unreachable[2]
    for _, out, err in (rejected, refused, unreachable):
        assert TOKEN not in out + err and "Traceback" not in out + err
