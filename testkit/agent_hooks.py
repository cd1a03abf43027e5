"""Fixtures for the agent hook tests, in the documented shapes (docs/protocols.md, Agent hooks).

- `payload(...)`: a hook's stdin JSON as Claude Code or Codex sends it (common fields plus the
  event's own: `prompt`, `source`, `stop_hook_active`, `trigger`, `reason`; Codex adds `turn_id`
  and `model`).
- `Transcript`: a Claude Code session file written line by line the way Claude Code writes it:
  chained `uuid`/`parentUuid`, `sessionId`, `cwd`, ISO timestamps; an assistant message split over
  several lines sharing one `message.id` (thinking, then text); tool use and tool results; the hook
  output recorded as an `attachment` line; a `system` stop-hook summary.
- `run_hook(...)`: `tap hook EVENT` as the agent runs it (a subprocess of the installed `tap`
  script, stdin in, stdout out), timed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TAP = str(Path(sys.executable).with_name("tap"))


def payload(event: str, session: str, cwd: Path | str, transcript: Path | str | None = None, **extra: Any) -> bytes:
    """A hook's input JSON (`event` in the agents' spelling, e.g. `UserPromptSubmit`)."""
    body: dict[str, Any] = {
        "session_id": session,
        "transcript_path": str(transcript) if transcript is not None else None,
        "cwd": str(cwd),
        "hook_event_name": event,
        "permission_mode": "default",
        **extra,
    }
    return json.dumps(body).encode()


class Transcript:
    """A Claude Code session transcript (`~/.claude/projects/<project>/<session>.jsonl`) being written."""

    def __init__(self, path: Path, session: str, cwd: Path | str) -> None:
        self.path = path
        self.session = session
        self.cwd = str(cwd)
        self.leaf: str | None = None
        self.clock = 0
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()

    def _line(self, kind: str, **fields: Any) -> str:
        self.clock += 1
        entry_id = str(uuid.uuid4())
        entry = {
            "parentUuid": self.leaf,
            "isSidechain": False,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session,
            "version": "2.1.3",
            "gitBranch": "main",
            "type": kind,
            "uuid": entry_id,
            "timestamp": f"2026-11-20T10:{self.clock // 60:02d}:{self.clock % 60:02d}.000Z",
            **fields,
        }
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")
        self.leaf = entry_id
        return entry_id

    def user(self, text: str) -> str:
        """The user's prompt; returns its uuid (the turn id)."""
        return self._line("user", message={"role": "user", "content": text})

    def hook_context(self, text: str) -> str:
        """The UserPromptSubmit hook's additional context, as Claude Code records it."""
        return self._line(
            "attachment",
            attachment={"type": "hook_additional_context", "content": [text], "hookName": "UserPromptSubmit"},
        )

    def assistant(self, text: str, *, tool: bool = False) -> str:
        """An assistant reply (thinking + text on two lines of one message); returns the text line's uuid
        (the turn id: the log-tail's reader keeps only text, so the thinking line carries no turn)."""
        message_id = "msg_" + uuid.uuid4().hex[:24]

        def message(block: dict[str, Any]) -> dict[str, Any]:
            return {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-6",
                "content": [block],
                "stop_reason": None,
                "usage": {"input_tokens": 12, "output_tokens": 40},
            }

        if tool:
            call = "toolu_" + uuid.uuid4().hex[:20]
            self._line("assistant", message=message({"type": "tool_use", "id": call, "name": "Bash", "input": {}}))
            self._line(
                "user",
                message={"role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "content": "ok"}]},
                toolUseResult={"stdout": "ok"},
            )
        self._line("assistant", message=message({"type": "thinking", "thinking": "Let me see.", "signature": "x"}))
        return self._line("assistant", message=message({"type": "text", "text": text}), requestId="req_1")

    def stop_summary(self) -> None:
        """Claude Code's system line after Stop hooks ran."""
        self._line("system", subtype="stop_hook_summary", content="", level="info")


@dataclass
class HookRun:
    """What one `tap hook` process did."""

    returncode: int
    stdout: bytes
    stderr: bytes

    def context(self) -> str:
        """The additionalContext it printed ("" when it printed nothing)."""
        if not self.stdout.strip():
            return ""
        return str(json.loads(self.stdout)["hookSpecificOutput"]["additionalContext"])


def run_hook(
    event: str,
    body: bytes,
    *,
    home: Path,
    agent: str = "claude",
    config: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 60.0,
) -> HookRun:
    """Run `tap hook EVENT` as an agent does: a new process, the payload on stdin."""
    args = [TAP] + (["--config", str(config)] if config else []) + ["hook", event]
    if agent != "claude":
        args += ["--agent", agent]
    environment = {k: v for k, v in os.environ.items() if k not in ("TAP_CONFIG", "TAP_ADMIN_TOKEN")}
    environment.update({"TAP_HOME": str(home), **(env or {})})
    proc = subprocess.run(args, input=body, capture_output=True, env=environment, timeout=timeout, check=False)
    return HookRun(proc.returncode, proc.stdout, proc.stderr)
