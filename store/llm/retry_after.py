"""Which HTTP errors of a model API are worth retrying, and the server's hint of when, as every LLM
adapter reads them.

Retryable: 408, 409, 429 and every 5xx (`RETRYABLE_STATUS` lists the 4xx ones). The hint:
`retry-after-ms` (milliseconds, Anthropic and OpenAI send it) wins over `retry-after` (seconds or
an HTTP date, RFC 9110); a hint in the past is 0, an unreadable one None.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping

__all__ = ["RETRYABLE_STATUS", "parse_retry_after"]

RETRYABLE_STATUS = frozenset({408, 409, 429})


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from `retry-after-ms`, else `retry-after` (seconds or an HTTP date)."""
    try:
        return max(0.0, float(headers["retry-after-ms"]) / 1000)
    except (KeyError, ValueError):
        pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    when = email.utils.parsedate_tz(value)
    return None if when is None else max(0.0, email.utils.mktime_tz(when) - time.time())
