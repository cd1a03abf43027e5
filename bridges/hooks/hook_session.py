"""HookService: what each agent hook event does, whatever carried it (a `tap hook` process or `tap serve`).

- SessionStart: the scope's most important current statements (tap.recall.digest), packed in the
  recall block format into `[hooks] start_budget_tokens`. Sources `startup`, `clear` and `compact`
  first reset the session's ledger (a new or emptied context), so after a compaction or a clear
  the essentials come again; `resume` keeps it (the resumed transcript still holds what was given).
- UserPromptSubmit: recall for `prompt` in the scope (the proxy's engine, block and budget), minus
  the memories this session was already given (bridges.hooks.ledger). A session that had no
  SessionStart (tap's Claude Code hook fires only after a /clear or a compaction:
  bridges.hooks.install) gets the start digest with its first prompt, before the recalled block.
  A memory block of tap's that the prompt quotes is no part of it (tap.block_tags). For Codex the
  prompt is also kept until its turn's Stop (see below).
Both go through the interception core like every other way in (the backend calls
tap.intercept.core.Interceptor.recall_turn): its deadline, its degraded reasons and counts, its
request log line and `tap why` record (path `/tap/hooks/EVENT`, conversation = the session), and
its block kept per turn: a prompt event sent again before its answer was committed gets the same
block (the turn is the prompt and what the session held then).
- Stop, PreCompact, SessionEnd: the exchange goes to ingestion, then the session's window is closed
  into a chunk at once (no waiting for the idle flush), and extraction is nudged. Claude Code: the
  transcript lines written since the last offset (`backend.read_transcript`, the log-tail's reader:
  turn ids = entry uuids, conversation = session id, so a turn the log-tail also reads is queued
  once). Codex (whose transcript is its own format): the prompt kept at UserPromptSubmit and the
  Stop's `last_assistant_message`, with ids from `turn_id`. With `stop_hook_active` (another Stop
  hook made the agent go on) the lines are queued but the window stays open: the exchange is not
  over. No answer is ever given to these events: tap never blocks or steers the agent.

`handle` computes the reply without committing it; `commit` records the memories given (the
ledger) and the status row. A transport that gave up waiting (deadline) does not commit, so a
memory the agent never received is not marked as given.

Invariants: no HTTP, no store library here (the backend is a small Protocol the composition root
implements, tap.wiring.hook_service); every event's scope comes from its `cwd` the same way (bridges.hooks.scope).
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from bridges.hooks.hook_db import HookState
from bridges.hooks.ledger import HookLedger
from bridges.hooks.names import EVENTS
from bridges.hooks.payload import HookInput, context_output
from bridges.hooks.scope import hook_scope
from tap.block_tags import remove_blocks
from tap.config import HooksConfig
from tap.intercept.core import TurnRecall
from tap.intercept.repeats import Skip
from tap.plural import plural
from tap.records import IngestEvent, Message


class HookBackend(Protocol):
    """What the service needs from the interception core, the store and the pipeline (see
    tap.wiring.hook_service). The blocks come from tap.intercept.core.Interceptor.recall_turn;
    `event` (the CLI spelling) names the `tap why` record's path, `session` its conversation."""

    def prompt_block(self, prompt: str, *, event: str, scope: str, session: str, turn: str, skip: Skip) -> TurnRecall:
        """The block for a prompt (the proxy's recall)."""
        ...

    def start_block(self, *, event: str, scope: str, session: str, turn: str, budget: int, skip: Skip) -> TurnRecall:
        """The scope's essentials for a new context (tap.recall.digest)."""
        ...

    def ingest(self, event: IngestEvent) -> int:
        """The one ingestion entry point; returns the new turns queued."""
        ...

    def read_transcript(self, path: Path, scope: str) -> int:
        """Ingest a Claude Code transcript's lines written since the last offset; returns new turns."""
        ...

    def close_conversation(self, scope: str, conversation: str) -> int:
        """Close the conversation's open window into chunks now; returns chunks queued."""
        ...

    def extract_soon(self) -> None:
        """Make sure queued chunks are extracted soon (a running worker needs nothing)."""
        ...


@dataclass
class HookReply:
    """The answer to one event and what committing it records (`started`: the session's start
    digest was given with it)."""

    output: dict[str, Any] | None = None
    session: str = ""
    given: tuple[str, ...] = ()
    outcome: str = "ok"
    started: bool = False


@dataclass
class _HookCounters:
    events: Counter[str] = field(default_factory=Counter)
    memories_given: int = 0
    turns_queued: int = 0


class HookService:
    """The hook events' policy (see the module docstring); thread-safe through its parts."""

    def __init__(
        self,
        config: HooksConfig,
        backend: HookBackend,
        state: HookState,
        *,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self.backend = backend
        self.state = state
        self.ledger = HookLedger(state)
        self._now = now
        self._counters = _HookCounters()

    def scope(self, payload: HookInput) -> str:
        """The scope of an event."""
        return hook_scope(self.config.scope, payload.cwd)

    def handle(self, event: str, agent: str, payload: HookInput) -> HookReply:
        """The reply to one event (`event` in its CLI spelling, bridges.hooks.names)."""
        handler = {
            "session-start": self.session_start,
            "user-prompt-submit": self.user_prompt_submit,
            "stop": self.stop,
            "pre-compact": self.pre_compact,
            "session-end": self.session_end,
        }[event]
        scope = self.scope(payload)
        self.state.seen(payload.session_id, agent, scope, payload.cwd)
        self._counters.events[event] += 1
        return handler(payload, agent, scope)

    def commit(self, event: str, agent: str, reply: HookReply) -> None:
        """Record what the agent was given and the status row (only once the reply was delivered)."""
        if reply.given:
            self.ledger.record(reply.session, reply.given)
            self._counters.memories_given += len(reply.given)
        if reply.started:
            self.state.mark_started(reply.session)
        self.state.fired(agent, event, reply.outcome)

    # -- context -----------------------------------------------------------------------------------

    def session_start(self, payload: HookInput, agent: str, scope: str) -> HookReply:
        """The scope's essentials for a new (or compacted, or cleared) context."""
        session = payload.session_id
        if payload.source != "resume":
            self.ledger.reset(session)
        if payload.source in ("", "startup"):
            self.state.prune()
        if self.config.start_budget_tokens <= 0:
            return HookReply(session=session, outcome="start digest off", started=True)
        reply = self._context("session-start", session, self._digest(scope, session, self.ledger.given(session)))
        reply.started = True
        return reply

    def _digest(self, scope: str, session: str, given: frozenset[str]) -> TurnRecall:
        """The scope's essentials that the session does not hold (`given`)."""
        turn = "start-" + uuid.uuid4().hex  # every start is a new context: nothing to reuse
        return self.backend.start_block(
            event="session-start",
            scope=scope,
            session=session,
            turn=turn,
            budget=self.config.start_budget_tokens,
            skip=lambda memory: memory.id in given,
        )

    def user_prompt_submit(self, payload: HookInput, agent: str, scope: str) -> HookReply:
        """Recall for the prompt, minus what the session already holds."""
        session = payload.session_id
        prompt = remove_blocks(payload.prompt)  # tap's own block, pasted back, is no part of the prompt
        if agent == "codex" and prompt.strip():
            self.state.pend(session, payload.turn_id, prompt)
        if not prompt.strip():
            return HookReply(session=session, outcome="empty prompt")
        given = self.ledger.given(session)
        turn = "prompt-" + hashlib.sha256(f"{payload.turn_id}\x1f{prompt}\x1f{len(given)}".encode()).hexdigest()[:20]
        result = self.backend.prompt_block(
            prompt,
            event="user-prompt-submit",
            scope=scope,
            session=session,
            turn=turn,
            skip=lambda memory: memory.id in given,
        )
        starts = not self.state.has_started(session)  # no SessionStart for this session: its digest comes now
        digest = None
        if starts and self.config.start_budget_tokens > 0:
            digest = self._digest(scope, session, given | frozenset(result.ids))
        reply = self._context("user-prompt-submit", session, *([digest] if digest is not None else []), result)
        reply.started = starts
        return reply

    @staticmethod
    def _context(event: str, session: str, *results: TurnRecall) -> HookReply:
        given = [r for r in results if not r.degraded and r.text]
        if not given:
            degraded = next((r for r in results if r.degraded), None)
            if degraded is not None:
                why = f"no memories: {degraded.degraded} (tap why {degraded.request_id})"
                return HookReply(session=session, outcome=why)
            return HookReply(session=session, outcome="no memories to give")
        ids = tuple(i for r in given for i in r.ids)
        return HookReply(
            output=context_output(EVENTS[event], "\n\n".join(r.text for r in given)),
            session=session,
            given=ids,
            outcome=f"gave {plural(len(ids), 'memory', 'memories')} ({sum(r.tokens for r in given)} tokens)",
        )

    # -- capture -----------------------------------------------------------------------------------

    def stop(self, payload: HookInput, agent: str, scope: str) -> HookReply:
        """The exchange that just ended goes to extraction now."""
        return self._capture(payload, agent, scope, close=not payload.stop_hook_active)

    def pre_compact(self, payload: HookInput, agent: str, scope: str) -> HookReply:
        """Everything not yet extracted goes now, before compaction drops it from the context."""
        return self._capture(payload, agent, scope, close=True)

    def session_end(self, payload: HookInput, agent: str, scope: str) -> HookReply:
        """The last exchange goes to extraction (quickly: the agent is exiting)."""
        return self._capture(payload, agent, scope, close=True)

    def _capture(self, payload: HookInput, agent: str, scope: str, *, close: bool) -> HookReply:
        session = payload.session_id
        if agent == "codex":
            turns = self._codex_exchange(payload, scope)
        else:
            turns = self._transcript(payload, scope)
        chunks = self.backend.close_conversation(scope, session) if close else 0
        if chunks:
            self.backend.extract_soon()
        self._counters.turns_queued += turns
        return HookReply(session=session, outcome=f"queued {plural(turns, 'turn')}, {plural(chunks, 'chunk')}")

    def _transcript(self, payload: HookInput, scope: str) -> int:
        if not payload.transcript_path:
            return 0
        path = Path(payload.transcript_path).expanduser()
        if path.suffix != ".jsonl" or not path.is_file():
            raise ValueError(f"transcript_path {payload.transcript_path!r} is not a JSONL file")
        return self.backend.read_transcript(path, scope)

    def _codex_exchange(self, payload: HookInput, scope: str) -> int:
        """A Codex turn: the prompt kept at UserPromptSubmit and the reply the Stop carries."""
        session, turn = payload.session_id, payload.turn_id
        prompt = self.state.take_pending(session, turn)
        reply = (payload.last_assistant_message or "").strip()
        if not turn:
            turn = "t" + hashlib.sha256(f"{prompt}\x1f{reply}".encode()).hexdigest()[:16]
        at = self._now()
        messages = []
        if prompt and prompt.strip():
            messages.append(Message(role="user", content=prompt, id=f"{turn}:user", timestamp=at))
        if reply:
            messages.append(Message(role="assistant", content=reply, id=f"{turn}:assistant", timestamp=at))
        if not messages:
            return 0
        return self.backend.ingest(IngestEvent(scope=scope, conversation=session, source="hook", messages=messages))

    def status(self) -> dict[str, Any]:
        """Counters for /tap/status."""
        return {
            "events": dict(self._counters.events),
            "memories_given": self._counters.memories_given,
            "turns_queued": self._counters.turns_queued,
        }
