"""The Anthropic provider: gate, extraction and reconcile over the Messages API (`anthropic` SDK).

The gate runs on `[extract] gate_model` (Haiku by default), extraction and reconcile on
`[extract] model` (Sonnet). Every call forces one tool (`tool_choice={"type": "tool", ...}`:
`gate_verdict`, `record_memories`, `reconcile_memories`) whose `input` is the structured answer,
validated strictly by tap.llm.schema. No `temperature` is sent (newer models reject
non-default sampling parameters) and no `strict` tool mode (its schema subset lacks the bounds used
here); the validation below is what tap relies on.

Invariants:
- the SDK never retries (`max_retries=0`): tap's durable queue owns retries and backoff;
- every failure is a `ProviderCallError`: 408/409/429/5xx/overloaded, connection errors and
  timeouts are retryable (with `retry_after` from `retry-after-ms`/`retry-after` when sent); other
  4xx (400/401/403/404/413/...), a refusal, running out of `max_tokens` and a missing API key are
  not; a tool input that fails validation is retryable and carries the call's `usage`;
- the API key is read from the env var `[extract] api_key_env` names (or passed in), handed to the
  SDK only, and redacted from every error message; a missing key fails each call, not startup,
  so the proxy keeps serving while extraction reports the problem.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anthropic
from anthropic.types import Message

from store.llm.anthropic_mapping import call_error, usage_of
from tap.candidates import CandidateMemory
from tap.config import ExtractConfig, read_secret
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

__all__ = ["AnthropicProvider"]

GATE_MAX_TOKENS = 300
EXTRACT_MAX_TOKENS = 4096
RECONCILE_MAX_TOKENS = 4096
_FINAL_STOPS = {
    "max_tokens": "ran out of max_tokens before finishing the answer",
    "refusal": "refused to answer",
    "model_context_window_exceeded": "ran out of context window",
}


class AnthropicProvider:
    """`LLMProvider` over Claude: Haiku gates, Sonnet extracts and reconciles."""

    def __init__(self, cfg: ExtractConfig, *, api_key: str | None = None) -> None:
        self._cfg = cfg
        key = api_key if api_key is not None else read_secret(cfg.api_key_env)
        self._client: anthropic.Anthropic | None = None
        if key:
            self._client = anthropic.Anthropic(
                api_key=key, base_url=cfg.anthropic_url, timeout=cfg.timeout_s, max_retries=0
            )

    def gate(self, chunk_text: str) -> tuple[GateVerdict, Usage]:
        """Haiku's verdict on whether the rendered chunk holds anything worth remembering."""
        raw, usage = self._call(
            model=self._cfg.gate_model,
            system=GATE_SYSTEM,
            message=gate_message(chunk_text),
            tool=("gate_verdict", "Record whether the excerpt is worth remembering.", gate_schema()),
            max_tokens=GATE_MAX_TOKENS,
        )
        return self._validated("gate_verdict", usage, lambda: parse_gate(raw)), usage

    def extract(self, chunk: Chunk, existing: list[Memory]) -> tuple[list[CandidateMemory], Usage]:
        """Sonnet's memories from the chunk, each citing turns of the chunk."""
        schema = memories_schema([turn.id for turn in chunk.turns])
        raw, usage = self._call(
            model=self._cfg.model,
            system=EXTRACT_SYSTEM,
            message=extract_message(chunk, existing),
            tool=("record_memories", "Record the memories extracted from the excerpt.", schema),
            max_tokens=EXTRACT_MAX_TOKENS,
        )
        return self._validated("record_memories", usage, lambda: parse_memories(raw, chunk)), usage

    def reconcile(self, candidates: list[CandidateMemory], similar: list[list[Memory]]) -> tuple[list[Decision], Usage]:
        """Sonnet's add/update/supersede/noop for every candidate, in one call (none for no candidates)."""
        if len(similar) != len(candidates):
            raise ValueError(f"{len(candidates)} candidates but {len(similar)} similar lists")
        if not candidates:
            return [], Usage(provider="anthropic", model=self._cfg.model, input_tokens=0, output_tokens=0)
        ids = list(dict.fromkeys(memory.id for group in similar for memory in group))
        raw, usage = self._call(
            model=self._cfg.model,
            system=RECONCILE_SYSTEM,
            message=reconcile_message(candidates, similar),
            tool=(
                "reconcile_memories",
                "Record one decision per candidate memory.",
                decisions_schema(len(candidates), ids),
            ),
            max_tokens=RECONCILE_MAX_TOKENS,
        )
        decisions = self._validated("reconcile_memories", usage, lambda: parse_decisions(raw, candidates, similar))
        return decisions, usage

    def close(self) -> None:
        """Close the HTTP connection pool."""
        if self._client is not None:
            self._client.close()

    # --- one call --------------------------------------------------------------------------------

    def _call(
        self,
        *,
        model: str,
        system: str,
        message: str,
        tool: tuple[str, str, dict[str, Any]],
        max_tokens: int,
    ) -> tuple[dict[str, object], Usage]:
        """Send one forced-tool request; the tool's input and the call's usage."""
        name, description, schema = tool
        client = self._require_client()
        try:
            response = client.messages.create(
                model=model,
                max_tokens=max_tokens,
                system=system,
                messages=[{"role": "user", "content": message}],
                tools=[{"name": name, "description": description, "input_schema": schema}],
                tool_choice={"type": "tool", "name": name},
            )
        except anthropic.APIError as exc:
            raise self._translate(exc, model) from exc
        usage = usage_of(response, model)
        return self._tool_input(response, name, usage), usage

    def _require_client(self) -> anthropic.Anthropic:
        if self._client is None:
            env = self._cfg.api_key_env
            raise ProviderCallError(
                f"no Anthropic API key: environment variable {env} is not set "
                "(its name comes from [extract] api_key_env)",
                retryable=False,
            )
        return self._client

    def _tool_input(self, response: Message, name: str, usage: Usage) -> dict[str, object]:
        """The forced tool's input; errors for truncated, refused or tool-less answers."""
        stop = response.stop_reason or ""
        if stop in _FINAL_STOPS:
            raise ProviderCallError(f"{self._where(usage.model)} {_FINAL_STOPS[stop]}", retryable=False, usage=usage)
        for block in response.content:
            if block.type == "tool_use" and block.name == name:
                return block.input
        raise ProviderCallError(
            f"{self._where(usage.model)} answered without a {name} tool call (stop_reason {stop or 'none'})",
            retryable=True,
            usage=usage,
        )

    def _validated[T](self, name: str, usage: Usage, parse: Callable[[], T]) -> T:
        """Run a parser over the tool input; a ValueError becomes a retryable ProviderCallError."""
        try:
            return parse()
        except ValueError as exc:
            reason = self._redact(str(exc))
            raise ProviderCallError(
                f"{self._where(usage.model)} returned an invalid {name} input: {reason}",
                retryable=True,
                usage=usage,
            ) from exc

    # --- errors ----------------------------------------------------------------------------------

    def _translate(self, exc: anthropic.APIError, model: str) -> ProviderCallError:
        """The SDK's error as a ProviderCallError (store.llm.anthropic_mapping)."""
        return call_error(
            exc, self._where(model), timeout_s=self._cfg.timeout_s, key_env=self._cfg.api_key_env, redact=self._redact
        )

    def _where(self, model: str) -> str:
        return f"Anthropic API at {self._cfg.anthropic_url} (model {model})"

    def _redact(self, text: str) -> str:
        """Text with the API key blanked out, should a server or library ever echo it."""
        key = self._client.api_key if self._client is not None else None
        return text.replace(key, "[redacted]") if key else text
