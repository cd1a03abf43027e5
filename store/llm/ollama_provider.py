"""The Ollama provider: gate, extraction and reconcile on a local model (`ollama` SDK, `/api/chat`).

One model (`[extract] ollama_model`) serves all three calls. Each call is a non-streamed chat with
the system prompt, the user message and `format=<JSON schema>` (Ollama constrains decoding to the
schema), at temperature 0; `message.content` is then decoded as JSON and validated strictly by
tap.llm.schema, exactly as the Anthropic provider validates its tool input.

Invariants:
- every failure is a `ProviderCallError`: the server not reachable (named by URL), timeouts,
  dropped connections, HTTP 408/429/5xx and malformed answers are retryable; an unknown model
  (404, with the `ollama pull` hint), other 4xx and an answer cut off by the context/length limit
  are not; a parse failure carries the call's `usage`;
- `Usage` comes from `prompt_eval_count` / `eval_count` (0 when the server leaves them out) and
  costs nothing (tap.llm.prices).
`httpx` is imported only to recognise the SDK's transport errors (it is the SDK's own transport).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import msgspec
import ollama

from tap.candidates import CandidateMemory
from tap.config import ExtractConfig
from tap.ingest.chunker import Chunk
from tap.llm.contract import Decision, GateVerdict, ProviderCallError, Usage
from tap.llm.prompts import (
    EXTRACT_SYSTEM,
    GATE_SYSTEM,
    RECONCILE_SYSTEM,
    extract_message,
    gate_message,
    reconcile_message,
)
from tap.llm.schema import (
    decisions_schema,
    gate_schema,
    memories_schema,
    parse_decisions,
    parse_gate,
    parse_memories,
)
from tap.records import Memory

__all__ = ["OllamaProvider"]

_RETRYABLE_STATUS = frozenset({-1, 408, 429})  # -1: an error line inside a stream


class OllamaProvider:
    """`LLMProvider` over a model served by Ollama."""

    def __init__(self, cfg: ExtractConfig) -> None:
        self._cfg = cfg
        self._client = ollama.Client(host=cfg.ollama_url, timeout=cfg.timeout_s)

    def gate(self, chunk_text: str) -> tuple[GateVerdict, Usage]:
        """The model's verdict on whether the rendered chunk holds anything worth remembering."""
        raw, usage = self._call(GATE_SYSTEM, gate_message(chunk_text), gate_schema())
        return self._validated("gate verdict", usage, lambda: parse_gate(raw)), usage

    def extract(self, chunk: Chunk, existing: list[Memory]) -> tuple[list[CandidateMemory], Usage]:
        """The model's memories from the chunk, each citing turns of the chunk."""
        schema = memories_schema([turn.id for turn in chunk.turns])
        raw, usage = self._call(EXTRACT_SYSTEM, extract_message(chunk, existing), schema)
        return self._validated("memories", usage, lambda: parse_memories(raw, chunk)), usage

    def reconcile(self, candidates: list[CandidateMemory], similar: list[list[Memory]]) -> tuple[list[Decision], Usage]:
        """The model's add/update/supersede/noop for every candidate, in one call (none for no candidates)."""
        if len(similar) != len(candidates):
            raise ValueError(f"{len(candidates)} candidates but {len(similar)} similar lists")
        if not candidates:
            return [], Usage(provider="ollama", model=self._cfg.ollama_model, input_tokens=0, output_tokens=0)
        ids = list(dict.fromkeys(memory.id for group in similar for memory in group))
        schema = decisions_schema(len(candidates), ids)
        raw, usage = self._call(RECONCILE_SYSTEM, reconcile_message(candidates, similar), schema)
        decisions = self._validated("decisions", usage, lambda: parse_decisions(raw, candidates, similar))
        return decisions, usage

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()  # type: ignore[no-untyped-call]  # the SDK leaves close() unannotated

    # --- one call --------------------------------------------------------------------------------

    def _call(self, system: str, message: str, schema: dict[str, Any]) -> tuple[object, Usage]:
        """One non-streamed chat constrained to `schema`; the decoded JSON answer and its usage."""
        try:
            response = self._client.chat(
                model=self._cfg.ollama_model,
                messages=[{"role": "system", "content": system}, {"role": "user", "content": message}],
                format=schema,
                options={"temperature": 0},
                stream=False,
            )
        except ollama.ResponseError as exc:
            raise self._status_error(exc) from exc
        except ConnectionError as exc:  # what the SDK raises for httpx.ConnectError
            raise self._error("is not reachable (is `ollama serve` running?)", retryable=True) from exc
        except httpx.TimeoutException as exc:
            raise self._error(f"timed out after {self._cfg.timeout_s:g}s", retryable=True) from exc
        except httpx.HTTPError as exc:  # dropped connections, protocol errors
            raise self._error(f"failed: {type(exc).__name__}: {exc}", retryable=True) from exc
        except ValueError as exc:  # a body that is not JSON or not a chat response (pydantic)
            raise self._error(f"sent a malformed response: {exc}", retryable=True) from exc
        usage = Usage(
            provider="ollama",
            model=self._cfg.ollama_model,
            input_tokens=response.prompt_eval_count or 0,
            output_tokens=response.eval_count or 0,
        )
        return self._decode(response, usage), usage

    def _decode(self, response: ollama.ChatResponse, usage: Usage) -> object:
        """`message.content` as JSON; errors for answers cut off or not JSON."""
        if response.done_reason == "length":
            raise self._error("stopped at its length limit before finishing the answer", False, usage)
        content = response.message.content or ""
        try:
            return msgspec.json.decode(content)
        except msgspec.DecodeError as exc:
            shown = content if len(content) <= 120 else content[:120] + "…"
            raise self._error(f"answered with text that is not JSON: {shown!r}", True, usage) from exc

    def _validated[T](self, what: str, usage: Usage, parse: Callable[[], T]) -> T:
        """Run a parser over the decoded answer; a ValueError becomes a retryable ProviderCallError."""
        try:
            return parse()
        except ValueError as exc:
            raise self._error(f"returned invalid {what}: {exc}", True, usage) from exc

    # --- errors ----------------------------------------------------------------------------------

    def _status_error(self, exc: ollama.ResponseError) -> ProviderCallError:
        status = exc.status_code
        if status == 404:
            return self._error(f"does not have the model (run: ollama pull {self._cfg.ollama_model})", False)
        retryable = status in _RETRYABLE_STATUS or status >= 500
        return self._error(f"answered HTTP {status}: {exc.error}", retryable)

    def _error(self, what: str, retryable: bool, usage: Usage | None = None) -> ProviderCallError:
        where = f"Ollama at {self._cfg.ollama_url} (model {self._cfg.ollama_model})"
        return ProviderCallError(f"{where} {what}", retryable=retryable, usage=usage)
