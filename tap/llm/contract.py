"""What the core gets back from a model: the value types every LLM adapter returns.

The pipeline asks a model three things about a chunk of conversation: is it worth remembering
(`gate`), which memories does it hold (`extract`), and how do those memories relate to what is
already stored (`reconcile`, one batched call for all candidates of a chunk). Every call returns
its result together with a `Usage`, so the cost ledger can price it (tap.llm.prices). The
Protocol the adapters implement is `LLMProvider` (below); the Telegram bridge's chat model
answers a `ChatReply` (`tap.intercept.reply_model.ReplyModel`).

Invariants of every `LLMProvider`:
- methods are synchronous (the SDKs are blocking; the worker runs them in a thread) and safe to
  call from several threads at once (the SDK clients are);
- `reconcile` needs one `similar` list per candidate (ValueError otherwise: a caller bug) and makes
  no call at all for an empty candidate list;
- a method either returns a complete, validated result or raises `ProviderCallError` (a
  `tap.errors.ProviderError`); it never returns half a result and never returns `[]` to hide a
  failure (an empty list means the model found nothing);
- `ProviderCallError.retryable` says whether the same call may succeed later, `retry_after` carries
  the server's hint in seconds, and `usage` what a failed-but-billed call cost (e.g. a response
  whose tool input did not validate), so the budget cap also counts wasted calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

import msgspec

from tap.errors import ProviderError
from tap.records import Memory

if TYPE_CHECKING:
    from tap.candidates import CandidateMemory
    from tap.ingest.chunker import Chunk

__all__ = [
    "Action",
    "LLMProvider",
    "ChatReply",
    "Decision",
    "GateVerdict",
    "ProviderCallError",
    "Usage",
]

Action = Literal["add", "update", "supersede", "noop", "conflict"]


class Usage(msgspec.Struct, frozen=True, kw_only=True):
    """Tokens one model call consumed, as the provider reported them."""

    provider: str
    model: str
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


class GateVerdict(msgspec.Struct, frozen=True, kw_only=True):
    """The LLM gate's answer: is this chunk worth extracting memories from, and why."""

    worth: bool
    reason: str


class Decision(msgspec.Struct, frozen=True, kw_only=True):
    """What to do with one candidate memory.

    `candidate` indexes the candidates passed to `reconcile`; `target` is "" for `add` and the id
    of the existing memory that an `update`/`supersede` replaces or a `noop` duplicates ("" when a
    `noop` duplicates nothing stored, e.g. trivia); `content` is the merged statement for
    `update`/`supersede` ("" means: use the candidate's own content).
    """

    action: Action
    candidate: int
    target: str = ""
    content: str = ""


class ProviderCallError(ProviderError):
    """A provider call failed; carries the server's retry hint and what the call cost."""

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        retry_after: float | None = None,
        usage: Usage | None = None,
    ) -> None:
        super().__init__(message, retryable=retryable)
        self.retry_after = retry_after
        self.usage = usage


@dataclass(frozen=True)
class ChatReply:
    """A chat model's answer (the Telegram bot's reply) and what it cost."""

    text: str
    usage: Usage


class LLMProvider(Protocol):
    """A model behind the gate, the extractor and reconcile (Anthropic, Ollama, or a fake).

    The contract (threads, errors, usage) is in this module's docstring; `make_llm_provider` (store.llm)
    builds the configured one."""

    def gate(self, chunk_text: str) -> tuple[GateVerdict, Usage]:
        """Is the rendered chunk worth extracting memories from?"""
        ...

    def extract(self, chunk: Chunk, existing: list[Memory]) -> tuple[list[CandidateMemory], Usage]:
        """Candidate memories from the chunk; `existing` are similar stored memories not to repeat."""
        ...

    def reconcile(self, candidates: list[CandidateMemory], similar: list[list[Memory]]) -> tuple[list[Decision], Usage]:
        """One decision per candidate (in candidate order) against its similar stored memories."""
        ...
