"""ReplyTee: a copy of a response's body, fed chunk by chunk to the right parser of its dialect.

Every transport that forwards a reply (the aiohttp proxy, the mitmproxy addon) feeds each chunk
it passes on to a `ReplyTee` and never waits for it:
- a streamed content type (`text/event-stream`, `application/x-ndjson`) goes to the dialect's
  incremental `stream_parser()`; anything else is kept (up to `MAX_TEE_BODY` bytes) and read by
  `parse_response` once complete;
- `on_reply` is called exactly once, with the finished reply, as soon as it is known: when the
  stream's terminal event was fed, or when the last byte of a body of declared length arrived, or
  else at `finish()`.  The caller feeds a chunk *before* passing it on, so the callback runs before
  the client has the end of the reply.  A failing callback is logged, never raised;
- `feed` and `finish` never raise on bad input (see tap.intercept.dialects.wire).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from tap.intercept.dialects.protocol import Dialect
from tap.intercept.dialects.wire import Reply, StreamParser

log = logging.getLogger(__name__)
STREAM_TYPES = ("text/event-stream", "application/x-ndjson")
MAX_TEE_BODY = 64 * 1024 * 1024

OnReply = Callable[[Reply], None]


def is_stream(content_type: str) -> bool:
    """Whether a response of this content type is read by a dialect's stream parser."""
    return content_type.strip().lower().startswith(STREAM_TYPES)


class ReplyTee:
    """Feeds a copy of one response to its dialect's parser (see the module docstring)."""

    def __init__(
        self, dialect: Dialect, content_type: str, length: int | None = None, on_reply: OnReply | None = None
    ) -> None:
        self._dialect = dialect
        self._parser: StreamParser | None = dialect.stream_parser() if is_stream(content_type) else None
        self._length = length
        self._on_reply = on_reply
        self._body: list[bytes] = []
        self._size = 0
        self.reply: Reply | None = None

    def feed(self, chunk: bytes) -> None:
        """Consume the next chunk of the body (a copy of what goes to the client)."""
        if self.reply is not None or not chunk:
            return
        if self._parser is not None:
            self._parser.feed(chunk)
            if self._parser.complete:
                self._done(self._parser.finish())
        elif self._size + len(chunk) <= MAX_TEE_BODY:
            self._body.append(chunk)
            self._size += len(chunk)
            if self._length is not None and self._size >= self._length:
                self._done(self._dialect.parse_response(b"".join(self._body)))

    def finish(self) -> Reply:
        """The reply (assembled from what arrived, when the body ended early)."""
        if self.reply is None:
            if self._parser is not None:
                self._done(self._parser.finish())
            else:
                self._done(self._dialect.parse_response(b"".join(self._body)))
        assert self.reply is not None
        return self.reply

    def _done(self, reply: Reply) -> None:
        self.reply = reply
        if self._on_reply is not None:
            try:
                self._on_reply(reply)
            except Exception:
                log.exception("the reply callback failed")
