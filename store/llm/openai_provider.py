"""The OpenAI-compatible provider: gate, extraction and reconcile over any `/v1/chat/completions`
server (`openai` SDK): llama.cpp's llama-server, vLLM, LM Studio, Ollama's `/v1`, OpenAI itself.

One model (`[extract] openai_model`) at `[extract] openai_url` serves all three calls. Each call is
a non-streamed chat (the system prompt, the user message) asking for one JSON object, validated
strictly by tap.llm.schema as the other providers' answers are. How the object is asked for
(`[extract] openai_output`):
- `json_schema`: `response_format = {"type": "json_schema", "json_schema": {name, schema,
  strict: true}}` (OpenAI's structured outputs; llama.cpp, vLLM, LM Studio and Ollama turn the
  schema into a grammar, so the answer cannot leave it);
- `tools`: one function whose parameters are the schema, forced with a named `tool_choice`;
- `json`: the schema written into the system prompt (tap.llm.prompts.JSON_ONLY), for servers
  that enforce neither;
- `auto` (the default) starts with `json_schema` and, when the server refuses a mode's request
  outright (HTTP 400, 422 or 501, or a 500 that names the schema or grammar), tries the next one
  at once; the first mode the server accepts is kept for the provider's life (logged once).
Sampling: `temperature` = `[extract] openai_temperature` (0 by default; a negative value sends
none, for models that refuse the parameter). No token limit is sent (OpenAI's reasoning models
refuse `max_tokens`): `[extract] timeout_s` bounds a call.

Invariants:
- the SDK never retries (`max_retries=0`): tap's durable queue owns retries and backoff;
- every failure is a `ProviderCallError`: timeouts, connection failures, 408/409/429/5xx and
  malformed answers (a body that is no chat completion, text that is no JSON, an object that does
  not validate) are retryable, with `retry_after` from the server's headers; other 4xx, an answer
  cut off at the length limit, a content filter and a refusal are not; a failure after the model
  answered carries the call's `usage`;
- the API key is read from the env var `[extract] openai_api_key_env` names (empty by default: a
  local server needs none, and a key set for OpenAI is not sent to whatever server `openai_url`
  names unless asked); without a key no `Authorization` header is sent at all; the key is
  redacted from every error message;
- `Usage.provider` is "openai" for the OpenAI API (api.openai.com: priced by tap.llm.prices) and
  "openai-compatible" for any other server (priced 0: the ledger counts its tokens, the daily
  budget cap does not limit it).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any, Literal
from urllib.parse import urlsplit

import openai

from store.llm.openai_answer import AnswerError, decode_completion, json_object, usage_of
from store.llm.retry_after import RETRYABLE_STATUS, parse_retry_after
from tap.candidates import CandidateMemory
from tap.config import ExtractConfig, read_secret
from tap.ingest.chunker import Chunk
from tap.llm.contract import Decision, GateVerdict, ProviderCallError, Usage
from tap.llm.prompts import (
    EXTRACT_SYSTEM,
    GATE_SYSTEM,
    JSON_ONLY,
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

__all__ = ["OpenAICompatibleProvider"]

log = logging.getLogger(__name__)

Mode = Literal["json_schema", "tools", "json"]
MODES: tuple[Mode, ...] = ("json_schema", "tools", "json")
_REFUSED_MODE = frozenset({400, 422, 501})  # a request the server does not take as it is
_OPENAI_HOST = "api.openai.com"


class OpenAICompatibleProvider:
    """`LLMProvider` over any OpenAI-compatible chat completions server."""

    def __init__(self, cfg: ExtractConfig, *, api_key: str | None = None) -> None:
        self._cfg = cfg
        self._key = api_key if api_key is not None else read_secret(cfg.openai_api_key_env)
        host = (urlsplit(cfg.openai_url).hostname or "").lower()
        self.provider = "openai" if host == _OPENAI_HOST else "openai-compatible"
        self._client = openai.OpenAI(
            api_key=self._key or "unused",  # the SDK wants one; without a key the header is left out
            base_url=cfg.openai_url,
            timeout=cfg.timeout_s,
            max_retries=0,
        )
        self._headers: dict[str, Any] = {} if self._key else {"Authorization": openai.Omit()}
        self._auto = cfg.openai_output == "auto"
        self._mode: Mode = "json_schema" if cfg.openai_output == "auto" else cfg.openai_output

    @property
    def mode(self) -> Mode:
        """How objects are asked for now (see the module docstring)."""
        return self._mode

    def gate(self, chunk_text: str) -> tuple[GateVerdict, Usage]:
        """The model's verdict on whether the rendered chunk holds anything worth remembering."""
        raw, usage = self._call("gate_verdict", GATE_SYSTEM, gate_message(chunk_text), gate_schema())
        return self._validated("gate_verdict", usage, lambda: parse_gate(raw)), usage

    def extract(self, chunk: Chunk, existing: list[Memory]) -> tuple[list[CandidateMemory], Usage]:
        """The model's memories from the chunk, each citing turns of the chunk."""
        schema = memories_schema([turn.id for turn in chunk.turns])
        raw, usage = self._call("record_memories", EXTRACT_SYSTEM, extract_message(chunk, existing), schema)
        return self._validated("record_memories", usage, lambda: parse_memories(raw, chunk)), usage

    def reconcile(self, candidates: list[CandidateMemory], similar: list[list[Memory]]) -> tuple[list[Decision], Usage]:
        """The model's add/update/supersede/noop for every candidate, in one call (none for no candidates)."""
        if len(similar) != len(candidates):
            raise ValueError(f"{len(candidates)} candidates but {len(similar)} similar lists")
        if not candidates:
            return [], Usage(provider=self.provider, model=self._cfg.openai_model, input_tokens=0, output_tokens=0)
        ids = list(dict.fromkeys(memory.id for group in similar for memory in group))
        schema = decisions_schema(len(candidates), ids)
        raw, usage = self._call("reconcile_memories", RECONCILE_SYSTEM, reconcile_message(candidates, similar), schema)
        decisions = self._validated("reconcile_memories", usage, lambda: parse_decisions(raw, candidates, similar))
        return decisions, usage

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    # --- one call --------------------------------------------------------------------------------

    def _call(self, name: str, system: str, message: str, schema: dict[str, Any]) -> tuple[object, Usage]:
        """One chat asking for a `name` object; the decoded JSON value and the call's usage."""
        modes = MODES[MODES.index(self._mode) :] if self._auto else (self._mode,)
        for mode in modes:
            try:
                body = self._send(mode, name, system, message, schema)
            except openai.APIStatusError as exc:
                if mode != modes[-1] and _refused_mode(exc):
                    log.debug(
                        "%s refused a %s request (HTTP %s); trying the next mode", self._where(), mode, exc.status_code
                    )
                    continue
                raise self._status_error(exc) from exc
            except openai.APITimeoutError as exc:
                raise self._error(f"timed out after {self._cfg.timeout_s:g}s", retryable=True) from exc
            except openai.APIConnectionError as exc:
                raise self._error(f"is not reachable: {self._redact(str(exc))}", retryable=True) from exc
            except openai.OpenAIError as exc:  # anything else the SDK raises before an answer
                raise self._error(f"failed: {self._redact(str(exc))}", retryable=True) from exc
            if mode != self._mode:
                log.warning(
                    "%s does not take a %s request; asking with %s from now on", self._where(), self._mode, mode
                )
                self._mode = mode
            return self._answer(body, name if mode == "tools" else "")
        raise AssertionError("unreachable: the last mode returns or raises")

    def _send(self, mode: Mode, name: str, system: str, message: str, schema: dict[str, Any]) -> bytes:
        """The raw body of one request in `mode` (the SDK raises for an HTTP error)."""
        extra: dict[str, Any] = {}
        if mode == "json_schema":
            extra["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": schema, "strict": True},
            }
        elif mode == "tools":
            function = {"name": name, "description": f"Record the {name.replace('_', ' ')}.", "parameters": schema}
            extra["tools"] = [{"type": "function", "function": function}]
            extra["tool_choice"] = {"type": "function", "function": {"name": name}}
        else:
            system = system + "\n\n" + JSON_ONLY.format(schema=json.dumps(schema, separators=(",", ":")))
        if self._cfg.openai_temperature >= 0:
            extra["temperature"] = self._cfg.openai_temperature
        raw = self._client.chat.completions.with_raw_response.create(
            model=self._cfg.openai_model,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": message}],
            stream=False,
            extra_headers=self._headers,
            **extra,
        )
        return raw.content

    def _answer(self, body: bytes, tool: str) -> tuple[object, Usage]:
        """The JSON value in a completion body and the call's usage; errors as ProviderCallError."""
        try:
            completion = decode_completion(body)
        except AnswerError as exc:
            raise self._error(str(exc), retryable=exc.retryable) from exc
        usage = usage_of(completion, self.provider, self._cfg.openai_model)
        try:
            return json_object(completion, tool=tool, usage=usage), usage
        except AnswerError as exc:
            raise self._error(str(exc), retryable=exc.retryable, usage=usage) from exc

    def _validated[T](self, name: str, usage: Usage, parse: Callable[[], T]) -> T:
        """Run a parser over the decoded answer; a ValueError becomes a retryable ProviderCallError."""
        try:
            return parse()
        except ValueError as exc:
            raise self._error(f"returned an invalid {name} object: {self._redact(str(exc))}", True, usage) from exc

    # --- errors ----------------------------------------------------------------------------------

    def _status_error(self, exc: openai.APIStatusError) -> ProviderCallError:
        status = exc.status_code
        retryable = status in RETRYABLE_STATUS or status >= 500
        detail = _server_message(exc)
        hint = ""
        if status in (401, 403):
            env = self._cfg.openai_api_key_env
            hint = (
                f" (check the key in ${env})"
                if env
                else " (the server wants a key: name its variable in [extract] openai_api_key_env)"
            )
        elif status == 404:
            hint = f" (is {self._cfg.openai_model!r} a model the server serves, and does openai_url end in /v1?)"
        return self._error(
            f"answered HTTP {status}{f': {self._redact(detail)}' if detail else ''}{hint}",
            retryable,
            retry_after=parse_retry_after(exc.response.headers) if retryable else None,
        )

    def _error(
        self, what: str, retryable: bool, usage: Usage | None = None, *, retry_after: float | None = None
    ) -> ProviderCallError:
        return ProviderCallError(f"{self._where()} {what}", retryable=retryable, retry_after=retry_after, usage=usage)

    def _where(self) -> str:
        return f"OpenAI-compatible server at {self._cfg.openai_url} (model {self._cfg.openai_model})"

    def _redact(self, text: str) -> str:
        """Text with the API key blanked out, should a server or library ever echo it."""
        return text.replace(self._key, "[redacted]") if self._key else text


def _server_message(exc: openai.APIStatusError) -> str:
    """The server's own words for an error: `error.message` of an OpenAI-shaped body, else the text."""
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else inner
        if isinstance(message, str):
            return " ".join(message.split())[:300]
    text = exc.response.text if exc.response is not None else ""
    return " ".join(text.split())[:300]


def _refused_mode(exc: openai.APIStatusError) -> bool:
    """Whether an error may say "not this way of asking" rather than "not this request"."""
    if exc.status_code in _REFUSED_MODE:
        return True
    words = _server_message(exc).lower()
    return exc.status_code == 500 and ("schema" in words or "grammar" in words)
