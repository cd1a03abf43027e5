"""Whose memories a request may read and write (docs/architecture.md, Scopes).

- `x-tap-scope` names the scope, else "default";
- with `[proxy] scope_by_api_key = true` the scope is a fingerprint of the client's API key and
  the header is ignored, so in a shared deployment no client can name another's scope; the key
  itself is never stored, only a SHA-256 prefix that cannot be reversed into it. Clients that
  send no API key at all (a local Ollama needs none) all share one scope, "anonymous": they can
  read each other's memories. `scope_rule` states the rule in effect (`tap status`).
Which *conversation* a request is in is tap.intercept.conversations's job.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping

DEFAULT_SCOPE = "default"
ANONYMOUS_SCOPE = "anonymous"
_VALID = re.compile(r"^[A-Za-z0-9._:@/-]{1,128}$")


def _digest(*parts: str, size: int = 16) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()[:size]


def api_key_of(headers: Mapping[str, str]) -> str:
    """The client's API key from `x-api-key` or `Authorization: Bearer …` ("" when absent)."""
    key = headers.get("x-api-key", "").strip()
    if key:
        return key
    auth = headers.get("authorization", "").strip()
    return auth[7:].strip() if auth.lower().startswith("bearer ") else auth


def key_fingerprint(key: str) -> str:
    """A scope name derived from an API key (the key cannot be recovered from it)."""
    return "key-" + _digest("tap-scope", key)


def resolve_scope(headers: Mapping[str, str], *, by_api_key: bool) -> str:
    """The scope of a request; ValueError for a malformed `x-tap-scope`."""
    if by_api_key:
        key = api_key_of(headers)
        return key_fingerprint(key) if key else ANONYMOUS_SCOPE
    scope = headers.get("x-tap-scope", "").strip()
    if not scope:
        return DEFAULT_SCOPE
    if not _VALID.match(scope):
        raise ValueError("x-tap-scope must be 1-128 characters of A-Z a-z 0-9 . _ : @ / -")
    return scope


def scope_rule(*, by_api_key: bool) -> dict[str, str]:
    """How the proxy picks scopes, in words (`tap status`, `/tap/status`)."""
    if by_api_key:
        return {
            "by": "api-key",
            "rule": "each API key has its own scope (key-<fingerprint>); x-tap-scope is ignored; clients that "
            f"send no API key all share the scope {ANONYMOUS_SCOPE!r} and can read each other's memories",
        }
    return {
        "by": "header",
        "rule": f"the x-tap-scope header names the scope; requests without it share the scope {DEFAULT_SCOPE!r}",
    }
