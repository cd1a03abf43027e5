"""Signing the web page in without the admin token in a link: one-time codes exchanged for sessions.

`tap ui` used to print `/ui#token=<admin token>`; with `--open` that link became the browser's
command line, which every local user can read (`/proc/PID/cmdline`), and the token never expires.
Now `tap ui` asks the running server for a sign-in code (`POST /tap/signin`, with the admin token)
and prints `/ui#code=<code>`; the page trades the code for a session (`POST /tap/session`, no
token: the code is the credential) and drops it from the address bar. A code works once and only
for CODE_S seconds, so one read from a process list is worth nothing by the time anyone could use
it; a session token works like the admin token on the admin API until it has been unused for
SESSION_IDLE_S or is SESSION_MAX_S old, or the server stops (sessions live in its memory only).
Codes and sessions are kept as SHA-256 digests, compared in constant time through dict lookup of
the digest.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable

CODE_S = 60.0
SESSION_IDLE_S = 8 * 3600.0
SESSION_MAX_S = 24 * 3600.0
MAX_PENDING = 100  # codes not yet used (the oldest go first)


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogateescape")).hexdigest()


class SignIns:
    """One-time sign-in codes and the sessions they open (in memory; see the module docstring)."""

    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self._now = now
        self._codes: dict[str, float] = {}  # digest -> expires at
        self._sessions: dict[str, tuple[float, float]] = {}  # digest -> (started, last used)

    def new_code(self) -> str:
        """A fresh one-time code, valid for CODE_S seconds."""
        self._forget_expired()
        while len(self._codes) >= MAX_PENDING:
            self._codes.pop(next(iter(self._codes)))
        code = secrets.token_urlsafe(24)
        self._codes[_digest(code)] = self._now() + CODE_S
        return code

    def open_session(self, code: str) -> str | None:
        """The session token for a valid code (which is used up); None for an unknown, used or
        expired code."""
        expires = self._codes.pop(_digest(code), None)
        if expires is None or self._now() > expires:
            return None
        token = secrets.token_urlsafe(32)
        now = self._now()
        self._sessions[_digest(token)] = (now, now)
        return token

    def valid(self, token: str) -> bool:
        """Whether a session token is open (and note that it was used now)."""
        key = _digest(token)
        found = self._sessions.get(key)
        if found is None:
            return False
        started, used = found
        now = self._now()
        if now - used > SESSION_IDLE_S or now - started > SESSION_MAX_S:
            del self._sessions[key]
            return False
        self._sessions[key] = (started, now)
        return True

    def end(self, token: str) -> None:
        """Sign a session out."""
        self._sessions.pop(_digest(token), None)

    def _forget_expired(self) -> None:
        now = self._now()
        for key in [key for key, expires in self._codes.items() if now > expires]:
            del self._codes[key]
