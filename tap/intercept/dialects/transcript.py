"""The normalised view of a request every dialect gives: who said what, and where the human turn is.

`PlainMessage` is one message reduced to what identifies it across requests: its role ("system", "user",
"assistant", "tool", or "" when malformed), its visible text, and stable markers for what else it
carries (tool results with their ids, images, ...).  Fields clients add, drop or move between
requests of one conversation (`cache_control`, thinking signatures, tool-use inputs, key order)
are not part of it, so the same message re-sent later normalises to the same `PlainMessage`.

Invariants:
- a transcript has exactly one entry per element of the request's `messages` (a prompt-only
  request has one entry), so an index into it is an index into `messages`;
- an assistant entry's text is its text blocks joined with no separator, exactly as the tee
  parsers reassemble a streamed reply (`tap.intercept.dialects.wire.Reply.text`), so a reply recorded after
  one exchange equals the assistant message the client sends back in the next;
- a user message that holds only tool results (Anthropic `tool_result` blocks) has role "tool",
  like OpenAI's and Ollama's `role: "tool"` messages: it is an agent-loop step, not a human;
- system messages at the very end of a request (Claude Code ends the first request of a session
  with its environment notes as a `role: "system"` message) belong to no turn: the newest turn is
  the last message before them (`newest_turn_index`), and that is where a memory block goes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from tap.block_tags import remove_blocks


class PlainMessage(NamedTuple):
    """One message, normalised (see the module docstring)."""

    role: str
    text: str
    extra: str = ""


@dataclass(frozen=True)
class HumanTurn:
    """The latest human turn of a request.

    `index` is its position in `messages`; `tool_step` is True when the request does not end with
    it but with tool results that followed it (an agent loop working on that human turn).
    """

    index: int
    text: str
    tool_step: bool


class ClientIds(NamedTuple):
    """What the client itself says about who is talking (see each dialect's `client_ids`).

    `session` names a conversation (a client session); `discriminator` only tells users apart
    and never names a conversation on its own.  `follows` and `thread` say that the history lives
    upstream and the request carries only what is new (the Responses API): `follows` is the id of
    the upstream reply it continues (`previous_response_id`), `thread` the upstream conversation
    it adds to (`conversation`).
    """

    session: str = ""
    discriminator: str = ""
    follows: str = ""
    thread: str = ""


_LOOP_ROLES = ("assistant", "tool", "system")


def newest_turn_index(said: Sequence[PlainMessage]) -> int | None:
    """The index of the last entry that is not a system message (None when there is none)."""
    for index in range(len(said) - 1, -1, -1):
        if said[index].role != "system":
            return index
    return None


def find_human_turn(said: Sequence[PlainMessage]) -> HumanTurn | None:
    """The latest human turn, or None when the newest turn is neither a human nor tool results.

    System messages after the newest turn are passed over (see the module docstring).  A newest
    turn that is a user message with text is a human turn.  One of tool results is a step of an
    agent loop: walking back over assistant, tool and system entries, the first user message with
    text is the human turn it works on.  A user message without text (only an image, say) ends the
    search with None, as does a malformed message.  The turn's text leaves out any memory block of
    tap's that the message already carries (tap.block_tags).
    """
    last = newest_turn_index(said)
    if last is None or said[last].role not in ("user", "tool"):
        return None
    for index in range(last, -1, -1):
        entry = said[index]
        if entry.role == "user":
            text = remove_blocks(entry.text)  # a replayed request's own block is no part of the turn
            return HumanTurn(index, text, index != last) if text.strip() else None
        if entry.role not in _LOOP_ROLES:
            return None
    return None


def history_end(said: Sequence[PlainMessage]) -> int:
    """How many entries form the history: everything up to and including the last assistant message.

    The rest is the newest user turn (a human message, or the tool results of a loop step).
    """
    for index in range(len(said) - 1, -1, -1):
        if said[index].role == "assistant":
            return index + 1
    return 0
