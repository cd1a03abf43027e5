"""The bot token and the webhook secret: read from the env vars `[telegram]` names, checked, redacted.

Invariants:
- secrets only ever come from the environment (`token_env`, `secret_env`), never from the file;
- a missing or malformed value is a `ConfigError` that names the env var and the rule, never the
  value itself;
- both values are registered with bridges.telegram.redact as soon as they are read, so no
  log line can show them afterwards;
- the Bot API URLs are built with PTB's `{token}` placeholder, so tap never formats a URL with
  the token itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bridges.telegram.redact import register_secret
from tap.config import TelegramConfig, read_secret
from tap.errors import ConfigError

_TOKEN = re.compile(r"^\d{3,20}:[A-Za-z0-9_-]{20,200}$")
_SECRET = re.compile(r"^[A-Za-z0-9_-]{1,256}$")


@dataclass(frozen=True, repr=False)
class Credentials:
    """The bot token and, for the webhook, the secret Telegram sends back in every request."""

    token: str
    secret: str

    def __repr__(self) -> str:
        return "Credentials(token=[redacted], secret=[redacted])"


def _secret(key: str, env_name: str, pattern: re.Pattern[str], unset: str, malformed: str) -> str:
    """The value of the env var `[telegram] key` names, registered for redaction before it is
    checked; ConfigError naming the key when it is unset (`unset`: what to put there) or does not
    match `pattern` (`malformed`: what it must look like)."""
    value = read_secret(env_name)
    if value is None:
        raise ConfigError(f"telegram.{key}: environment variable {env_name} is not set ({unset})")
    register_secret(value)
    if not pattern.match(value):
        raise ConfigError(f"telegram.{key}: ${env_name} {malformed}")
    return value


def read_token(cfg: TelegramConfig) -> str:
    """The bot token from `$[telegram] token_env`; ConfigError when unset or not token-shaped."""
    return _secret(
        "token_env",
        cfg.token_env,
        _TOKEN,
        "put the bot token from @BotFather in it",
        "does not look like a bot token (expected <digits>:<letters, digits, _ or ->, as @BotFather prints it)",
    )


def read_webhook_secret(cfg: TelegramConfig) -> str:
    """The webhook secret from `$[telegram] secret_env`; ConfigError when unset or malformed."""
    return _secret(
        "secret_env",
        cfg.secret_env,
        _SECRET,
        "choose a random secret, e.g. `openssl rand -hex 32`",
        "must be 1-256 characters of A-Z a-z 0-9 _ - (Telegram's rule for secret_token)",
    )


def read_credentials(cfg: TelegramConfig) -> Credentials:
    """Token and secret together (what `tap serve` and `set-webhook` need)."""
    return Credentials(token=read_token(cfg), secret=read_webhook_secret(cfg))


def bot_url(cfg: TelegramConfig) -> str:
    """PTB `base_url` for `[telegram] api_url` (PTB fills in `{token}`)."""
    return cfg.api_url.rstrip("/") + "/bot{token}"


def file_url(cfg: TelegramConfig) -> str:
    """PTB `base_file_url` for `[telegram] api_url`."""
    return cfg.api_url.rstrip("/") + "/file/bot{token}"
