"""Reading an OpenAI-compatible `/v1/chat/completions` answer: the JSON object a model gave, and what
the call cost.

The body is decoded here with tolerant msgspec Structs (unknown fields skipped, every field
optional), not through the SDK's models: servers differ (llama.cpp, vLLM, LM Studio, Ollama's /v1),
and a malformed body must become a clear error, not an attribute error deep in a caller.

Where the object is, by output mode (store.llm.openai_provider):
- `tools`: the arguments of the named function call (a JSON string, or an object as some servers
  send it); a server that answered in text anyway (a named `tool_choice` read as "auto") is read
  as the `json` mode would;
- `json_schema` and `json`: the message content. Text around the object is tolerated, since a
  server that ignores `response_format` often wraps it: a leading `<think>…</think>` block, a
  Markdown code fence, prose before the first `{` or after the last `}`.

Errors (`AnswerError`): `retryable` False for an answer that cannot get better by asking again
(cut off at the length limit, a content filter, a refusal), True otherwise; `usage` when the
server reported it (a failed but billed call still counts in the ledger).
"""

from __future__ import annotations

import re

import msgspec

from tap.llm.contract import Usage

__all__ = ["AnswerError", "Completion", "decode_completion", "json_object", "usage_of"]


class AnswerError(Exception):
    """The answer holds no usable JSON object (see the module docstring)."""

    def __init__(self, message: str, *, retryable: bool, usage: Usage | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.usage = usage


class _Function(msgspec.Struct):
    name: str = ""
    arguments: str | dict[str, object] = ""


class _ToolCall(msgspec.Struct):
    function: _Function | None = None


class _Message(msgspec.Struct):
    content: str | None = None
    tool_calls: list[_ToolCall] | None = None
    refusal: str | None = None


class _Choice(msgspec.Struct):
    message: _Message | None = None
    finish_reason: str | None = None


class _PromptDetails(msgspec.Struct):
    cached_tokens: int | None = None


class _Usage(msgspec.Struct):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    prompt_tokens_details: _PromptDetails | None = None


class Completion(msgspec.Struct):
    """The parts of a chat completion tap reads."""

    choices: list[_Choice] = msgspec.field(default_factory=list)
    usage: _Usage | None = None


def decode_completion(body: bytes) -> Completion:
    """The completion in a response body; AnswerError (retryable) for a body that is not one."""
    try:
        completion = msgspec.json.decode(body, type=Completion)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise AnswerError(
            f"sent a malformed chat completion ({exc}): {_shown(body.decode(errors='replace'))}", retryable=True
        ) from exc
    if not completion.choices or completion.choices[0].message is None:
        raise AnswerError("sent a chat completion without a message", retryable=True, usage=None)
    return completion


def usage_of(completion: Completion, provider: str, model: str) -> Usage:
    """Tokens of one call; input excludes cached prompt tokens, which count apart (as Anthropic's)."""
    usage = completion.usage or _Usage()
    cached = (usage.prompt_tokens_details.cached_tokens or 0) if usage.prompt_tokens_details else 0
    prompt = usage.prompt_tokens or 0
    return Usage(
        provider=provider,
        model=model,
        input_tokens=max(0, prompt - cached),
        output_tokens=usage.completion_tokens or 0,
        cache_read_tokens=min(cached, prompt) if prompt else cached,
    )


_FINAL = {
    "length": "stopped at its length limit before finishing the answer",
    "content_filter": "withheld the answer (content filter)",
}


def json_object(completion: Completion, *, tool: str, usage: Usage) -> object:
    """The JSON value the model answered with (the function call's arguments when `tool` names
    one, else the content); AnswerError when there is none."""
    choice = completion.choices[0]
    message = choice.message or _Message()
    reason = choice.finish_reason or ""
    if reason in _FINAL:
        raise AnswerError(_FINAL[reason], retryable=False, usage=usage)
    if message.refusal:
        raise AnswerError(f"refused to answer: {_shown(message.refusal)}", retryable=False, usage=usage)
    if tool:
        for call in message.tool_calls or []:
            if call.function is not None and call.function.name == tool:
                arguments = call.function.arguments
                return arguments if isinstance(arguments, dict) else _decode(arguments, usage)
    text = message.content or ""
    if not text.strip():
        expected = f"a {tool} call or " if tool else ""
        raise AnswerError(
            f"answered without {expected}any content (finish_reason {reason or 'none'})", retryable=True, usage=usage
        )
    return _decode(text, usage)


_THINKING = re.compile(r"^\s*<think>.*?</think>", re.DOTALL)
_FENCE = re.compile(r"^\s*```[A-Za-z]*\s*\n?(.*?)\n?```\s*$", re.DOTALL)


def _decode(text: str, usage: Usage) -> object:
    """JSON from a model's text, tolerating a thinking block, a code fence or prose around an object."""
    body = _THINKING.sub("", text).strip()
    fenced = _FENCE.match(body)
    body = fenced.group(1) if fenced else body
    try:
        return msgspec.json.decode(body)
    except msgspec.DecodeError:
        pass
    start, end = body.find("{"), body.rfind("}")
    if 0 <= start < end:
        try:
            return msgspec.json.decode(body[start : end + 1])
        except msgspec.DecodeError:
            pass
    raise AnswerError(f"answered with text that is not JSON: {_shown(text)}", retryable=True, usage=usage)


def _shown(text: str) -> str:
    """At most 120 characters of a server's text, for an error message."""
    return repr(text if len(text) <= 120 else text[:120] + "…")
