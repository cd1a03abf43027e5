"""The hook JSON both agents send (stdin of a command hook, body of an http hook) and what goes back.

Input (docs/protocols.md, Agent hooks; Codex's `codex-rs/hooks/schema/generated/*.input.schema.json`):
common `session_id`, `transcript_path` (Codex: nullable), `cwd`, `hook_event_name`,
`permission_mode`; then per event `prompt` (UserPromptSubmit), `source` (SessionStart:
startup | resume | clear | compact), `stop_hook_active` and `last_assistant_message` (Stop),
`trigger` (PreCompact), `reason` (SessionEnd); Codex adds `turn_id` and `model`. The reader is
tolerant: unknown fields are ignored, missing ones take defaults; only `session_id` is required.

Output: `{"hookSpecificOutput": {"hookEventName": EVENT, "additionalContext": TEXT}}` for
SessionStart and UserPromptSubmit (the shape both agents accept); every other answer is empty.
tap never sends `decision`, `continue` or `systemMessage`: a memory tool must not steer the agent.
"""

from __future__ import annotations

from typing import Any

import msgspec


class HookInput(msgspec.Struct):
    """One hook event's payload (tolerant reader)."""

    session_id: str = ""
    transcript_path: str | None = None
    cwd: str = ""
    hook_event_name: str = ""
    permission_mode: str = ""
    prompt: str = ""
    source: str = ""
    stop_hook_active: bool = False
    last_assistant_message: str | None = None
    trigger: str = ""
    reason: str = ""
    turn_id: str = ""
    model: str = ""


def parse_input(body: bytes) -> HookInput:
    """Decode a hook payload; ValueError says what is wrong."""
    try:
        payload = msgspec.json.decode(body, type=HookInput)
    except msgspec.ValidationError as exc:
        raise ValueError(f"unexpected hook payload: {exc}") from exc
    except msgspec.DecodeError as exc:
        raise ValueError(f"hook payload is not JSON: {exc}") from exc
    if not payload.session_id.strip():
        raise ValueError("hook payload has no session_id")
    return payload


def context_output(event: str, text: str) -> dict[str, Any]:
    """The answer that adds `text` to the agent's context for `event` (its agent-side name)."""
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
