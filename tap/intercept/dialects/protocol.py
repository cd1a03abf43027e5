"""The `Dialect` protocol: what the interception core needs from one LLM API's requests and replies.

The proxy routes, the Telegram bridge and the mitmproxy addon all read and rewrite requests
through these methods (via tap.intercept.core), so a request is handled the same way whichever way it
came in.  Each dialect module states its own cache-safety rules (docs/protocols.md).
"""

from __future__ import annotations

from typing import Protocol

from tap.intercept.dialects.common import JsonObject
from tap.intercept.dialects.transcript import ClientIds, HumanTurn, PlainMessage
from tap.intercept.dialects.wire import Reply, StreamParser


class Dialect(Protocol):
    """One API dialect: request reading and rewriting, error shape, and its response parsers."""

    name: str
    upstream: str
    """Which `[upstream]` URL the dialect is forwarded to: "anthropic", "openai" or "ollama"."""

    def parse_request(self, body: bytes) -> JsonObject:
        """Decode a request body; `ValueError` with a short reason when it is not a JSON object."""
        ...

    def encode(self, req: JsonObject) -> bytes:
        """Encode a request body, keeping key order."""
        ...

    def transcript(self, req: JsonObject) -> list[PlainMessage]:
        """Every message, normalised (tap.intercept.dialects.transcript), one entry per message."""
        ...

    def system_text(self, req: JsonObject) -> str:
        """The top-level system prompt's text ("" when the dialect keeps it among the messages)."""
        ...

    def human_turn(self, req: JsonObject) -> HumanTurn | None:
        """The latest human turn (also for an agent-loop step), or None."""
        ...

    def latest_user_text(self, req: JsonObject) -> str | None:
        """The text of the last message when it is a human turn (None for tool results, prefills)."""
        ...

    def client_ids(self, req: JsonObject) -> ClientIds:
        """The session and the user discriminator the client itself sends, if any."""
        ...

    def inject(self, req: JsonObject, block: str) -> JsonObject:
        """A new request with `block` added after the newest turn; the input is not changed."""
        ...

    def error_body(self, status: int, message: str) -> tuple[bytes, str]:
        """An error body in this dialect's own shape, and its content type."""
        ...

    def model_of(self, req: JsonObject) -> str:
        """The requested model name, or "" when absent."""
        ...

    def is_streaming(self, req: JsonObject) -> bool:
        """Whether the upstream will answer with a stream."""
        ...

    def stream_parser(self) -> StreamParser:
        """A fresh tee parser for this dialect's streamed responses."""
        ...

    def parse_response(self, body: bytes) -> Reply:
        """The reply in a whole (non-streamed) response body."""
        ...
