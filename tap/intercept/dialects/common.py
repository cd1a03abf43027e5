"""Shared pieces of the request dialects: tolerant JSON helpers and the `JsonDialect` base.

Invariants:
- pure: no I/O, no clock, no randomness; the same input always gives the same output;
- nothing here mutates its arguments: rewrites build new containers along the changed path only
  and share every untouched sub-object with the input;
- readers never raise on unexpected shapes (a non-list `messages`, a message that is not an
  object, a block without `text`): they return an empty value, so a malformed request degrades to
  "no text to recall on" and is forwarded unchanged.  Only `parse_request` (bad JSON) and
  `inject` (nothing to inject into) raise, with `ValueError`.
"""

from __future__ import annotations

from typing import Any

import msgspec

from tap.intercept.dialects.transcript import ClientIds, HumanTurn, PlainMessage, find_human_turn

JsonObject = dict[str, Any]
"""A decoded JSON object (key order as received is preserved by msgspec and by `encode`)."""

_BOM = b"\xef\xbb\xbf"


def parse_object(body: bytes) -> JsonObject:
    """Decode `body` as one JSON object (a leading UTF-8 BOM is tolerated)."""
    try:
        value = msgspec.json.decode(body.removeprefix(_BOM))
    except msgspec.DecodeError as exc:
        raise ValueError(f"invalid JSON: {exc}") from None
    except RecursionError:
        raise ValueError("invalid JSON: nested too deeply") from None
    except UnicodeDecodeError:
        raise ValueError("invalid JSON: the body is not UTF-8 text") from None
    if not isinstance(value, dict):
        raise ValueError(f"request body must be a JSON object, not {json_kind(value)}")
    return value


def json_kind(value: object) -> str:
    """The JSON name of a decoded value's type, for error messages."""
    kinds: dict[type, str] = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return kinds.get(type(value), "a number")


def encode_json(value: object) -> bytes:
    """Encode with msgspec (dict key order is kept, so re-encoding is deterministic)."""
    return msgspec.json.encode(value)


def as_dict(value: object) -> JsonObject | None:
    """`value` if it is a JSON object, else None."""
    return value if isinstance(value, dict) else None


def as_list(value: object) -> list[Any]:
    """`value` if it is a JSON array, else an empty list."""
    return value if isinstance(value, list) else []


def str_field(obj: JsonObject | None, key: str) -> str:
    """`obj[key]` if it is a string, else ""."""
    value = obj.get(key) if obj is not None else None
    return value if isinstance(value, str) else ""


def int_fields(obj: object) -> dict[str, int]:
    """The integer-valued members of a JSON object (booleans and nested objects are skipped)."""
    found = as_dict(obj) or {}
    return {k: v for k, v in found.items() if isinstance(v, int) and not isinstance(v, bool)}


def messages_of(req: JsonObject) -> list[Any]:
    """The request's `messages` array, or [] when missing or malformed."""
    return as_list(req.get("messages"))


def role_of(message: object) -> str:
    """A message's role, or "" when the message is malformed."""
    return str_field(as_dict(message), "role")


def newest_message(req: JsonObject, system_roles: tuple[str, ...] = ("system",)) -> tuple[int, JsonObject] | None:
    """(index, message) of the newest turn: the last message whose role is not in `system_roles`
    (system messages after it belong to no turn, tap.intercept.dialects.transcript); None when
    there is none or it is malformed."""
    messages = messages_of(req)
    for index in range(len(messages) - 1, -1, -1):
        if role_of(messages[index]) not in system_roles:
            message = as_dict(messages[index])
            return (index, message) if message is not None else None
    return None


def newest_message_if(
    req: JsonObject, role: str, system_roles: tuple[str, ...] = ("system",)
) -> tuple[int, JsonObject] | None:
    """(index, message) of the newest turn when it has `role`, else None."""
    found = newest_message(req, system_roles)
    return found if found is not None and role_of(found[1]) == role else None


def block_text(content: object, block_type: str = "text") -> str:
    """String content as is, or the `text` of the `block_type` blocks joined by newlines."""
    if isinstance(content, str):
        return content
    texts = [str_field(b, "text") for b in as_list(content) if str_field(as_dict(b), "type") == block_type]
    return "\n".join(t for t in texts if t)


def replace_message(req: JsonObject, index: int, message: JsonObject) -> JsonObject:
    """A new request whose `messages[index]` is `message`; everything else is shared."""
    messages = list(messages_of(req))
    messages[index] = message
    return {**req, "messages": messages}


def require_block(block: str) -> str:
    """Reject an empty memory block: an empty text block is an invalid request upstream."""
    if not block.strip():
        raise ValueError("the memory block is empty")
    return block


def newest_user_or_raise(req: JsonObject, system_roles: tuple[str, ...] = ("system",)) -> tuple[int, JsonObject]:
    """(index, message) of the newest turn, which must be a user message."""
    found = newest_message_if(req, "user", system_roles)
    if found is None:
        raise ValueError("the newest turn is not a user message")
    return found


def insert_message(req: JsonObject, index: int, message: JsonObject) -> JsonObject:
    """A new request with `message` inserted at `index` of `messages`; everything else is shared."""
    messages = list(messages_of(req))
    messages.insert(index, message)
    return {**req, "messages": messages}


def stream_flag(req: JsonObject, *, default: bool) -> bool:
    """The request's `stream` flag; absent or null means `default`."""
    value = req.get("stream")
    return default if value is None else value is True


def markers(content: object, skip: tuple[str, ...] = ("text",)) -> str:
    """Stable markers for a content list's blocks other than `skip` types ("[image][document]")."""
    kinds = [str_field(as_dict(b), "type") or "?" for b in as_list(content)]
    return "".join(f"[{kind}]" for kind in kinds if kind not in skip)


class JsonDialect:
    """Behaviour every dialect shares: JSON bodies, a `model` field, an explicit `stream` flag,
    and the human turn found on the dialect's transcript."""

    name = "json"
    upstream = "openai"
    stream_default = False

    def parse_request(self, body: bytes) -> JsonObject:
        """Decode a request body; `ValueError` with a short reason when it is not a JSON object."""
        return parse_object(body)

    def encode(self, req: JsonObject) -> bytes:
        """Encode a request body, keeping key order."""
        return encode_json(req)

    def model_of(self, req: JsonObject) -> str:
        """The requested model name, or "" when absent."""
        return str_field(req, "model")

    def is_streaming(self, req: JsonObject) -> bool:
        """Whether the upstream will answer with a stream."""
        return stream_flag(req, default=self.stream_default)

    def transcript(self, req: JsonObject) -> list[PlainMessage]:
        """Every message, normalised (overridden per dialect)."""
        return [PlainMessage("", "") for _ in messages_of(req)]

    def system_text(self, req: JsonObject) -> str:
        """The top-level system prompt ("" unless the dialect has one)."""
        return ""

    def client_ids(self, req: JsonObject) -> ClientIds:
        """What the client says about who is talking (nothing, unless the dialect knows a field)."""
        return ClientIds()

    def human_turn(self, req: JsonObject) -> HumanTurn | None:
        """The latest human turn (tap.intercept.dialects.transcript.find_human_turn)."""
        return find_human_turn(self.transcript(req))

    def latest_user_text(self, req: JsonObject) -> str | None:
        """The text of the last message when it is a human turn (not tool results, not a prefill)."""
        turn = self.human_turn(req)
        return turn.text if turn is not None and not turn.tool_step else None
