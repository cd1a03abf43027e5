"""Realistic log files for the log-tail tests, written the way the tools write them.

`claude_session(...)` is a Claude Code session transcript with everything a real one has: a summary
line, meta and command-noise lines, thinking, tool use and tool results (with `toolUseResult`),
hook progress and attachments, assistant messages split over several lines sharing one
`message.id`, a sub-agent sidechain interleaved, an edited prompt (an abandoned branch), a
compaction (boundary + compact summary), a synthetic API-error reply, and an image message.
`EXPECTED` lists the turns the conversation must become, in order: (uuid, role, text).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SESSION = "5f0c2b1e-8c1d-4a51-9a3e-2d7b9c6f1a10"
CWD = "/home/ana/projects/billing"
PROJECT_DIR = "-home-ana-projects-billing"

ANA_INTRO = (
    "I'm Ana, I lead the payments team. We're migrating the billing service from MySQL to Postgres "
    "next month, and I prefer small pull requests over big-bang changes."
)
PLAN_1 = "Migration plan:\n1. Dump the schema with pgloader.\n2. Rewrite the three stored procedures."
PLAN_2 = "Shall I open the first pull request for the schema dump?"
EXPECTED: list[tuple[str, str, str]] = [
    ("u-intro", "user", ANA_INTRO),
    ("a-ack", "assistant", "Got it. I'll start by reading the current schema."),
    ("a-schema", "assistant", "The schema has 14 tables. We decided to keep UUID primary keys for invoices."),
    ("a-plan1", "assistant", PLAN_1 + "\n\n" + PLAN_2),
    ("u-alembic", "user", "Use Alembic for the migrations, not Flyway."),
    ("a-alembic", "assistant", "Alembic it is. I will set it up in the billing repo."),
    ("u-priya", "user", "My manager Priya wants the migration finished by June 30."),
    ("a-priya", "assistant", "Noted: the deadline is June 30, so the schema dump ships first."),
    ("u-image", "user", "This is the ER diagram we agreed on last Tuesday."),
    ("a-image", "assistant", "Thanks, the diagram matches the 14 tables."),
]
NEVER = (
    "Caveat",
    "command-name",
    "Set model",
    "tool_use_id",
    "SECRET_TOOL_OUTPUT",
    "thinking about",
    "Flyway it is",
    "Use Flyway for the migrations.",
    "sidechain",
    "This session is being continued",
    "API Error",
    "hook said",
    "Request interrupted",
)


class Clock:
    """ISO timestamps one second apart."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self) -> str:
        self.n += 1
        return f"2025-06-02T09:{self.n // 60:02d}:{self.n % 60:02d}.000Z"


def _base(kind: str, uuid: str, parent: str | None, at: Clock, **extra: Any) -> dict[str, Any]:
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "cwd": CWD,
        "sessionId": SESSION,
        "version": "2.0.14",
        "gitBranch": "main",
        "type": kind,
        "uuid": uuid,
        "timestamp": at(),
        **extra,
    }


def user(uuid: str, parent: str | None, content: Any, at: Clock, **extra: Any) -> dict[str, Any]:
    return _base("user", uuid, parent, at, message={"role": "user", "content": content}, **extra)


def assistant(uuid: str, parent: str | None, msg_id: str, block: dict[str, Any], at: Clock, **extra: Any) -> dict:
    message = {
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "model": extra.pop("model", "claude-sonnet-4-5-20250929"),
        "content": [block],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {
            "input_tokens": 4,
            "cache_creation_input_tokens": 1520,
            "cache_read_input_tokens": 12000,
            "output_tokens": 87,
            "service_tier": "standard",
        },
    }
    return _base("assistant", uuid, parent, at, message=message, requestId="req_011CT" + uuid, **extra)


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(tool_id: str, name: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": payload}


def tool_result(uuid: str, parent: str, tool_id: str, output: str, at: Clock) -> dict[str, Any]:
    content = [{"tool_use_id": tool_id, "type": "tool_result", "content": output, "is_error": False}]
    return user(uuid, parent, content, at, toolUseResult={"stdout": output, "stderr": "", "interrupted": False})


def sidechain(uuid: str, parent: str | None, role: str, value: str, at: Clock) -> dict[str, Any]:
    if role == "user":
        entry = user(uuid, parent, value, at)
    else:
        entry = assistant(uuid, parent, "msg_side_" + uuid, text(value), at)
    entry["isSidechain"] = True
    entry["agentId"] = "a1b2c3"
    return entry


def claude_session_entries() -> list[dict[str, Any]]:
    """Every line of the session, in the order Claude Code appends them."""
    at = Clock()
    caveat = (
        "Caveat: The messages below were generated by the user while running local commands. "
        "DO NOT respond to these messages or otherwise consider them in your response unless the user "
        "explicitly asks you to."
    )
    entries: list[dict[str, Any]] = [
        {"type": "summary", "summary": "Billing migration to Postgres", "leafUuid": "a-image"},
        user("u-caveat", None, caveat, at, isMeta=True),
        user(
            "u-cmd",
            "u-caveat",
            "<command-name>/model</command-name>\n<command-message>model</command-message>\n"
            "<command-args></command-args>",
            at,
        ),
        user("u-cmdout", "u-cmd", "<local-command-stdout>Set model to sonnet</local-command-stdout>", at),
        user("u-intro", "u-cmdout", ANA_INTRO, at),
        assistant(
            "a-think",
            "u-intro",
            "msg_01",
            {"type": "thinking", "thinking": "thinking about the schema", "signature": "EqQBCkYIBxgCKkB"},
            at,
        ),
        assistant("a-ack", "a-think", "msg_01", text("Got it. I'll start by reading the current schema."), at),
        assistant("a-read", "a-ack", "msg_01", tool_use("toolu_01", "Read", {"file_path": CWD + "/schema.sql"}), at),
        _base(
            "progress",
            "p-hook",
            "a-read",
            at,
            data={"type": "hook_progress", "hookName": "PreToolUse:Read"},
            toolUseID="toolu_01",
            parentToolUseID="toolu_01",
        ),
        tool_result("t-read", "a-read", "toolu_01", "CREATE TABLE invoices (...) -- SECRET_TOOL_OUTPUT", at),
        sidechain("s-1", None, "user", "sidechain task: find every stored procedure", at),
        assistant(
            "a-schema",
            "t-read",
            "msg_02",
            text("The schema has 14 tables. We decided to keep UUID primary keys for invoices."),
            at,
        ),
        sidechain("s-2", "s-1", "assistant", "sidechain answer: there are three", at),
        assistant("a-bash", "a-schema", "msg_02", tool_use("toolu_02", "Bash", {"command": "ls migrations"}), at),
        tool_result("t-bash", "a-bash", "toolu_02", "0001_init.sql\n0002_invoices.sql", at),
        user("u-interrupt", "t-bash", [text("[Request interrupted by user for tool use]")], at),
        assistant(
            "a-think2",
            "u-interrupt",
            "msg_03",
            {"type": "thinking", "thinking": "thinking about order", "signature": "EqQBCkYIBxgCKkC"},
            at,
        ),
        assistant("a-plan1", "a-think2", "msg_03", text(PLAN_1), at),
        assistant("a-plan2", "a-plan1", "msg_03", text(PLAN_2), at),
        _base("system", "sys-stop", "a-plan2", at, subtype="stop_hook_summary", content="hook said ok", level="info"),
        user("u-flyway", "a-plan2", "Use Flyway for the migrations.", at),
        assistant("a-flyway", "u-flyway", "msg_04", text("Flyway it is."), at),
        user("u-alembic", "a-plan2", "Use Alembic for the migrations, not Flyway.", at),  # edited prompt
        assistant("a-alembic", "u-alembic", "msg_05", text("Alembic it is. I will set it up in the billing repo."), at),
        _base(
            "system",
            "b-compact",
            None,
            at,
            subtype="compact_boundary",
            content="Conversation compacted",
            logicalParentUuid="a-alembic",
            compactMetadata={"trigger": "auto", "preTokens": 155000},
        ),
        user(
            "u-summary",
            "b-compact",
            "This session is being continued from a previous conversation that ran out "
            "of context. The conversation is summarized below: Ana migrates billing to Postgres.",
            at,
            isCompactSummary=True,
            isVisibleInTranscriptOnly=True,
        ),
        user("u-priya", "u-summary", "My manager Priya wants the migration finished by June 30.", at),
        _base(
            "attachment",
            "at-hook",
            "u-priya",
            at,
            attachment={"type": "hook_additional_context", "content": ["hook said remember things"]},
        ),
        assistant(
            "a-priya", "at-hook", "msg_06", text("Noted: the deadline is June 30, so the schema dump ships first."), at
        ),
        assistant(
            "a-err",
            "a-priya",
            "msg_07",
            text("API Error: Request timed out."),
            at,
            model="<synthetic>",
            isApiErrorMessage=True,
        ),
        user(
            "u-image",
            "a-err",
            [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
                text("This is the ER diagram we agreed on last Tuesday."),
            ],
            at,
        ),
        assistant("a-image", "u-image", "msg_08", text("Thanks, the diagram matches the 14 tables."), at),
        {"type": "custom-title", "customTitle": "billing migration", "sessionId": SESSION},
    ]
    return entries


def jsonl_line(entry: dict[str, Any]) -> str:
    return json.dumps(entry, separators=(",", ":")) + "\n"


def write_claude_session(projects: Path, *, session: str = SESSION) -> Path:
    """`projects/<project>/<session>.jsonl` plus a sub-agent transcript next to it."""
    folder = projects / PROJECT_DIR
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{session}.jsonl"
    path.write_text("".join(jsonl_line(e) for e in claude_session_entries()), encoding="utf-8")
    agents = folder / session / "subagents"
    agents.mkdir(parents=True, exist_ok=True)
    at = Clock()
    (agents / "agent-a1b2c3.jsonl").write_text(
        jsonl_line(sidechain("x-1", None, "user", "sidechain sub-agent prompt", at))
        + jsonl_line(sidechain("x-2", "x-1", "assistant", "sidechain sub-agent reply", at)),
        encoding="utf-8",
    )
    return path
