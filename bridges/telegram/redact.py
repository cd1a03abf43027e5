"""Keep the bot token (and the webhook secret) out of every log line and error tap writes.

python-telegram-bot puts the token in every Bot API URL (`…/bot<token>/sendMessage`): httpx logs
those URLs at INFO, PTB logs its base URL at DEBUG, and PTB's `InvalidToken` names the token.
Instead of chasing loggers (a filter on a logger does not see its children's records, a filter
on a handler misses handlers added later), one log-record factory scrubs every record when it is
created: its message, its exception text and its stack text.

Invariants:
- after `register_secret(s)`, no `LogRecord` created in this process has `s` in `getMessage()`,
  `exc_text` or `stack_info`, whichever logger or handler is involved;
- records without a secret are left untouched (lazy %-formatting is kept);
- secrets shorter than `MIN_SECRET` characters are not registered (replacing a 2-letter string
  everywhere would garble logs; Bot API tokens are ~46 characters);
- `redact(text)` is what code uses for strings that leave tap another way (exceptions turned into
  CLI errors, chat messages).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

MASK = "[redacted]"
MIN_SECRET = 8

_secrets: set[str] = set()
_lock = threading.Lock()
_installed = False
_formatter = logging.Formatter()


def redact(text: str) -> str:
    """`text` with every registered secret replaced by [redacted]."""
    for secret in tuple(_secrets):
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def register_secret(secret: str) -> None:
    """Never log `secret` again (installs the record factory on first use)."""
    global _installed
    if len(secret) < MIN_SECRET:
        return
    with _lock:
        _secrets.add(secret)
        if not _installed:
            _install()
            _installed = True


def _install() -> None:
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        if _secrets:
            scrub(record)
        return record

    logging.setLogRecordFactory(factory)


def scrub(record: logging.LogRecord) -> None:
    """Redact a record in place (message, exception text, stack text)."""
    try:
        message = record.getMessage()
    except Exception:  # a malformed %-format: logging reports it later; scrub the raw parts
        record.msg, record.args = redact(str(record.msg)), None
    else:
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
    if record.exc_info and record.exc_info[0] is not None:
        text = _formatter.formatException(record.exc_info)
        clean = redact(text)
        if clean != text:
            record.exc_text = clean
    if record.stack_info:
        record.stack_info = redact(record.stack_info)
