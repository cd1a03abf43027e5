"""The one mapping from the anthropic SDK to tap: its errors to ProviderCallError, a response's
usage to Usage. Used by the extraction pipeline's provider (store.llm.anthropic_provider) and the
Telegram bot's replies (store.llm.replies), so both retry the same statuses, read the same
retry hints and count the same tokens.

- retryable: timeouts, connection failures, 408/409/429, every 5xx and `overloaded_error`; the
  server's `retry-after-ms` / `retry-after` (store.llm.retry_after) rides along as `retry_after`;
- not retryable: other 4xx (a bad key names the variable that holds it, never the key);
- usage: input, output, cache read and cache write tokens (absent cache fields count 0).
"""

from __future__ import annotations

from collections.abc import Callable

import anthropic
from anthropic.types import Message

from store.llm.retry_after import RETRYABLE_STATUS, parse_retry_after
from tap.llm.contract import ProviderCallError, Usage

__all__ = ["call_error", "usage_of"]


def _keep(text: str) -> str:
    return text


def call_error(
    exc: anthropic.APIError,
    where: str,
    *,
    timeout_s: float,
    key_env: str,
    redact: Callable[[str], str] = _keep,
) -> ProviderCallError:
    """The SDK's error as a ProviderCallError (retryable or not, with the server's retry hint).
    `where` names the API and model; `redact` blanks anything secret in the server's text."""
    if isinstance(exc, anthropic.APITimeoutError):
        return ProviderCallError(f"{where} timed out after {timeout_s:g}s", retryable=True)
    if isinstance(exc, anthropic.APIConnectionError):
        return ProviderCallError(f"{where} is not reachable: {redact(str(exc))}", retryable=True)
    if not isinstance(exc, anthropic.APIStatusError):
        return ProviderCallError(f"{where} failed: {redact(str(exc))}", retryable=True)
    status = exc.status_code
    kind = exc.type or "error"
    retryable = status in RETRYABLE_STATUS or status >= 500 or kind == "overloaded_error"
    detail = f": {redact(exc.api_message)}" if exc.api_message else ""
    hint = f" (check the key in ${key_env})" if status in (401, 403) else ""
    return ProviderCallError(
        f"{where} answered HTTP {status} {kind}{detail}{hint}",
        retryable=retryable,
        retry_after=parse_retry_after(exc.response.headers) if retryable else None,
    )


def usage_of(response: Message, model: str) -> Usage:
    """Tokens of one response (cache fields are absent when caching was not involved)."""
    usage = response.usage
    return Usage(
        provider="anthropic",
        model=response.model or model,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_input_tokens or 0,
        cache_write_tokens=usage.cache_creation_input_tokens or 0,
    )
