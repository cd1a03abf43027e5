"""`tap telegram set-webhook URL | delete-webhook | info`: point Telegram at tap, and check it.

These talk to the Bot API directly (`[telegram] api_url`), not to a running `tap serve`. The token
and the secret come from the env vars `[telegram] token_env` / `secret_env`; a missing one is a
config error (exit 2) naming the variable. Bot API failures exit 1 with a one-line message that
never contains the token.
"""

from __future__ import annotations

from typing import Any

import click

from tap.cli.shared import emit_json, state
from tap.config import TelegramConfig

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
drop_option = click.option(
    "--drop-pending-updates", is_flag=True, help="Discard the updates Telegram queued while no webhook answered."
)


def _config() -> TelegramConfig:
    """`[telegram]`, once its bot token is there: a missing one is said before python-telegram-bot
    (seconds to import) is loaded."""
    from bridges.telegram.credentials import read_token

    cfg = state().load().config.telegram
    read_token(cfg)
    return cfg


def _show(doc: dict[str, Any], as_json: bool) -> None:
    if as_json:
        emit_json(doc)
        return
    click.echo(f"bot:              {doc['bot']}")
    click.echo(f"webhook:          {doc['url'] or '(none)'}")
    click.echo(f"allowed updates:  {', '.join(doc['allowed_updates']) or '(Telegram default)'}")
    click.echo(f"pending updates:  {doc['pending_update_count']}")
    if doc["last_error_message"]:
        click.echo(f"last error:       {doc['last_error_date']}: {doc['last_error_message']}")


@click.group("telegram")
def telegram() -> None:
    """Manage the Telegram bot's webhook (the bot itself runs inside `tap serve`)."""


@telegram.command("set-webhook")
@click.argument("url")
@drop_option
@json_option
def set_webhook(url: str, drop_pending_updates: bool, as_json: bool) -> None:
    """Tell Telegram to deliver the bot's updates to URL (https, e.g. https://host/telegram/webhook)."""
    import asyncio

    cfg = _config()
    from bridges.telegram import botapi  # python-telegram-bot: seconds to import, so only here

    try:
        warnings = botapi.check_webhook_url(url, cfg.path)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="URL") from None
    doc = asyncio.run(botapi.set_webhook(cfg, url, drop_pending_updates=drop_pending_updates))
    for warning in warnings:
        click.echo(f"tap: warning: {warning}", err=True)
    if not cfg.enabled:
        click.echo("tap: warning: [telegram] enabled = false, so `tap serve` will not answer yet", err=True)
    _show(doc, as_json)


@telegram.command("delete-webhook")
@drop_option
@json_option
def delete_webhook(drop_pending_updates: bool, as_json: bool) -> None:
    """Stop Telegram from delivering updates to tap."""
    import asyncio

    cfg = _config()
    from bridges.telegram import botapi

    _show(asyncio.run(botapi.delete_webhook(cfg, drop_pending_updates=drop_pending_updates)), as_json)


@telegram.command("info")
@json_option
def info(as_json: bool) -> None:
    """Show the bot and its webhook as Telegram sees them (URL, pending updates, last error)."""
    import asyncio

    cfg = _config()
    from bridges.telegram import botapi

    _show(asyncio.run(botapi.webhook_info(cfg)), as_json)
