"""Hook event and agent names: the CLI spelling (`user-prompt-submit`) and the agents' (`UserPromptSubmit`).

Standard library only (imported by the fast command path).
"""

from __future__ import annotations

EVENTS: dict[str, str] = {
    "session-start": "SessionStart",
    "user-prompt-submit": "UserPromptSubmit",
    "stop": "Stop",
    "pre-compact": "PreCompact",
    "session-end": "SessionEnd",
}
"""CLI name → the event name in the agents' settings files and payloads."""

AGENTS: tuple[str, ...] = ("claude", "codex")
PROMPT_EVENTS = frozenset({"session-start", "user-prompt-submit"})
"""Events that answer with context (the rest only hand the transcript to ingestion)."""

_BY_AGENT_NAME = {camel: cli for cli, camel in EVENTS.items()}


def cli_event(name: str) -> str | None:
    """The CLI name of an event given either spelling (`Stop`, `stop`, `user-prompt-submit`); None if unknown."""
    name = name.strip()
    if name in EVENTS:
        return name
    if name in _BY_AGENT_NAME:
        return _BY_AGENT_NAME[name]
    lowered = name.lower().replace("_", "-")
    if lowered in EVENTS:
        return lowered
    squashed = {camel.lower(): cli for camel, cli in _BY_AGENT_NAME.items()}
    return squashed.get(name.lower())
