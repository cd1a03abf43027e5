"""HookService over tap's real runtime (embedded Chroma, the ONNX embedder, the queue, the worker).

Payloads and transcripts are in the documented shapes (testkit/agent_hooks.py); every
check goes through the real pieces: recall, the ledger in hooks.db, the log-tail's transcript
reader, the ingestion queue and the extraction worker.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from bridges.hooks.hook_db import STATE_FILE, HookState
from bridges.hooks.hook_session import HookService
from bridges.hooks.payload import HookInput, parse_input
from bridges.logtail import OffsetStore, Tailer
from tap.block_tags import CLOSE, OPEN
from tap.config import LoadedConfig, parse_config
from tap.intercept.conversations import ConversationResolver
from tap.intercept.core import Interceptor
from tap.recall.why import WhyLog
from tap.runtime.metrics import Metrics
from tap.tokens import count_tokens
from tap.wiring.hook_service import CoreBlocks, Pipeline, RuntimeBackend, TranscriptReader
from tap.wiring.runtime import Runtime, open_runtime
from testkit.agent_hooks import Transcript, payload
from testkit.fakes import fake_adapters
from testkit.stored import stored_anywhere


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    home = tmp_path_factory.mktemp("hooks-runtime")
    rt = open_runtime(LoadedConfig(config=parse_config(""), path=None, data_dir=home), adapters=fake_adapters)
    yield rt
    rt.close()


class Rig:
    """A HookService on the shared runtime, with its own hooks.db and a git project per test."""

    def __init__(self, rt: Runtime, tmp_path: Path, *, config: str = "") -> None:
        self.rt = rt
        self.project = tmp_path / "billing"
        (self.project / ".git").mkdir(parents=True)
        self.db = tmp_path / STATE_FILE
        self.state = HookState(self.db)
        self.offsets = OffsetStore(self.db)
        self.pipeline = Pipeline(rt.queue, rt.ingestor, TranscriptReader(self.offsets, rt.ingestor.ingest))
        self.why = WhyLog(parse_config("").why)
        self.service = self.make_service(config)

    def make_service(self, config: str = "") -> HookService:
        parsed = parse_config(config)
        interceptor = Interceptor(
            parsed, recall=self.rt.recall, metrics=Metrics(), conversations=ConversationResolver(), why=self.why
        )

        blocks = CoreBlocks(interceptor, self.rt.memories.newest_statements, asyncio.run)
        return HookService(parsed.hooks, RuntimeBackend(blocks, self.pipeline), self.state)

    def send(self, event: str, body: bytes, *, agent: str = "claude", service: HookService | None = None) -> Any:
        service = service or self.service
        reply = service.handle(event, agent, parse_input(body))
        service.commit(event, agent, reply)
        return reply

    def transcript(self, session: str, cwd: Path | None = None) -> Transcript:
        return Transcript(
            self.project.parent / "projects" / "-billing" / f"{session}.jsonl", session, cwd or self.project
        )

    def seen(self, conversation: str) -> list[str]:
        with sqlite3.connect(self.rt.queue.path) as db:
            rows = db.execute("SELECT turn_id FROM seen WHERE conversation = ?", (conversation,)).fetchall()
        return sorted(r[0] for r in rows)

    def close(self) -> None:
        self.state.close()
        self.offsets.close()


@pytest.fixture
def rig(runtime: Runtime, tmp_path: Path) -> Iterator[Rig]:
    made = Rig(runtime, tmp_path)
    yield made
    made.close()


def context(reply: Any) -> str:
    return "" if reply.output is None else str(reply.output["hookSpecificOutput"]["additionalContext"])


def prompt(rig: Rig, session: str, text: str, **extra: Any) -> Any:
    return rig.send("user-prompt-submit", payload("UserPromptSubmit", session, rig.project, None, prompt=text), **extra)


def test_prompt_gets_the_proxy_block_and_never_the_same_memory_twice_in_a_session(rig: Rig) -> None:
    scope = str(rig.project)
    rig.rt.memories.add(scope=scope, content="The user's team uses Postgres for the billing service", importance=4)
    first = prompt(rig, "s-1", "which database does billing use?")
    assert first.output == {
        "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": context(first)}
    }
    block = context(first)
    assert block.startswith("<recalled-memories>") and "Postgres" in block and count_tokens(block) <= 500
    assert context(prompt(rig, "s-1", "which database does billing use?")) == ""  # already in this session
    assert "Postgres" in context(prompt(rig, "s-other", "which database does billing use?"))
    # another process (a standalone hook) reads the same ledger from hooks.db
    assert context(prompt(rig, "s-1", "which database does billing use?", service=rig.make_service())) == ""


def test_compaction_and_clear_reset_the_ledger_and_resume_keeps_it(rig: Rig) -> None:
    scope = str(rig.project)
    rig.rt.memories.add(scope=scope, content="The user prefers small pull requests", importance=5)
    start = rig.send("session-start", payload("SessionStart", "s-2", rig.project, None, source="startup"))
    assert start.output["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "small pull requests" in context(start)
    resumed = rig.send("session-start", payload("SessionStart", "s-2", rig.project, None, source="resume"))
    assert "small pull requests" not in context(resumed)  # the resumed transcript still holds it
    assert context(prompt(rig, "s-2", "how big should my pull requests be?")) == ""
    for source in ("compact", "clear"):
        again = rig.send("session-start", payload("SessionStart", "s-2", rig.project, None, source=source))
        assert "small pull requests" in context(again), source
    assert context(prompt(rig, "s-2", "how big should my pull requests be?")) == ""


def test_a_session_without_session_start_gets_its_digest_with_the_first_prompt(rig: Rig) -> None:
    # tap's Claude Code SessionStart hook fires only after /clear or a compaction (one process fewer per run)
    scope = str(rig.project)
    rig.rt.memories.add(scope=scope, content="The user prefers small pull requests", importance=5)
    rig.rt.memories.add(scope=scope, content="The user's team uses Postgres for the billing service", importance=3)
    first = context(prompt(rig, "s-5", "which database does billing use?"))
    assert first.count("<recalled-memories>") == 2  # the digest, then the block recalled for the prompt
    assert first.index("small pull requests") < first.index("Postgres")
    assert context(prompt(rig, "s-5", "what about pull requests?")) == ""  # given once, as at SessionStart
    rig.send("session-start", payload("SessionStart", "s-6", rig.project, None, source="startup"))
    assert context(prompt(rig, "s-6", "which database does billing use?")).count("<recalled-memories>") <= 1
    standalone = rig.make_service()  # a hook process of its own reads the same record from hooks.db
    assert context(prompt(rig, "s-5", "which database does billing use?", service=standalone)) == ""


def test_session_start_digest_is_the_most_important_current_statements_within_budget(
    runtime: Runtime, tmp_path: Path
) -> None:
    rig = Rig(runtime, tmp_path, config="[hooks]\nstart_budget_tokens = 80\n")
    try:
        scope = str(rig.project)
        for n in range(30):
            rig.rt.memories.add(scope=scope, content=f"Minor detail number {n} about the build scripts", importance=1)
        rig.rt.memories.add(scope=scope, content="The user deploys billing on Fly.io", importance=5)
        old = rig.rt.memories.add(scope=scope, content="The user lives in Berlin", importance=5)
        rig.rt.memories.edit(old.id, content="The user lives in Lisbon")
        block = context(rig.send("session-start", payload("SessionStart", "s-3", rig.project, None, source="startup")))
        assert count_tokens(block) <= 80
        assert "Fly.io" in block and "Lisbon" in block and "Berlin" not in block
        assert block.count("Minor detail") < 30
        off = Rig(runtime, tmp_path / "off", config="[hooks]\nstart_budget_tokens = 0\n")
        reply = off.send("session-start", payload("SessionStart", "s-4", rig.project, None, source="startup"))
        assert reply.output is None
        off.close()
    finally:
        rig.close()


def test_stop_reads_only_new_transcript_lines_and_extraction_follows(rig: Rig) -> None:
    session = "0b7d2f6a-stop"
    transcript = rig.transcript(session)
    asked = transcript.user("We decided to keep UUID primary keys for invoices.")
    transcript.hook_context("<recalled-memories>…</recalled-memories>")
    answered = transcript.assistant("Good, UUID keys stay for invoices.", tool=True)
    transcript.stop_summary()
    stop = payload("Stop", session, rig.project, transcript.path, stop_hook_active=False)
    assert rig.send("stop", stop).outcome == "queued 2 turns, 1 chunk"
    assert rig.seen(session) == sorted([asked, answered])
    assert rig.send("stop", stop).outcome == "queued 0 turns, 0 chunks"  # nothing new since the offset
    rig.rt.worker.drain(flush=False)
    found = [m for m in rig.rt.memories.list_memories(scope=str(rig.project), limit=50) if m.conversation == session]
    assert any("UUID primary keys" in m.content for m in found)
    assert {m.source for m in found} == {"hook"} and all(set(m.sources) <= {asked, answered} for m in found)


def test_stop_hook_active_queues_the_lines_but_keeps_the_exchange_open(rig: Rig) -> None:
    session = "c1-active"
    transcript = rig.transcript(session)
    transcript.user("The staging database is called billing-stage.")
    transcript.assistant("Noted.")
    active = payload("Stop", session, rig.project, transcript.path, stop_hook_active=True)
    assert rig.send("stop", active).outcome == "queued 2 turns, 0 chunks"
    transcript.assistant("Anything else?")
    done = payload("Stop", session, rig.project, transcript.path, stop_hook_active=False)
    assert rig.send("stop", done).outcome == "queued 1 turn, 1 chunk"


@pytest.mark.parametrize("event", ["pre-compact", "session-end"])
def test_pre_compact_and_session_end_send_pending_lines_now(rig: Rig, event: str) -> None:
    session = f"pending-{event}"
    transcript = rig.transcript(session)
    transcript.user("Our on-call rotation changes every Monday.")
    transcript.assistant("Understood.")
    extra = {"trigger": "auto"} if event == "pre-compact" else {"reason": "exit"}
    name = "PreCompact" if event == "pre-compact" else "SessionEnd"
    reply = rig.send(event, payload(name, session, rig.project, transcript.path, **extra))
    assert reply.output is None and reply.outcome == "queued 2 turns, 1 chunk"


def test_hooks_and_log_tail_reading_one_transcript_queue_each_turn_once(rig: Rig, tmp_path: Path) -> None:
    session = "5f0c2b1e-both"
    transcript = rig.transcript(session)
    ids = [transcript.user("I moved the invoices to S3."), transcript.assistant("Done moving invoices.")]
    tail = Tailer([str(transcript.path.parent)], OffsetStore(tmp_path / "logtail.db"), _sink(rig))
    rig.send("stop", payload("Stop", session, rig.project, transcript.path))
    assert tail.poll(one_shot=True) == 0  # the log-tail finds every turn already queued
    ids += [transcript.user("The bucket is invoices-eu."), transcript.assistant("Bucket noted.")]
    assert tail.poll(one_shot=True) == 2  # this time the log-tail is first ...
    assert rig.send("stop", payload("Stop", session, rig.project, transcript.path)).outcome.startswith("queued 0 turns")
    assert rig.seen(session) == sorted(ids)  # ... and the hook adds nothing: one row per transcript uuid


def _sink(rig: Rig) -> Any:
    return lambda events: sum(rig.rt.ingestor.ingest(event) for event in events)


def test_codex_turn_is_captured_from_its_prompt_and_stop(rig: Rig) -> None:
    session = "019a-codex-thread"
    codex_transcript = rig.project / "rollout-2026-11-20.jsonl"
    codex_transcript.write_text('{"type":"session_meta","payload":{}}\n')
    common = {"model": "gpt-5.1-codex", "turn_id": "turn-7"}
    rig.send(
        "user-prompt-submit",
        payload(
            "UserPromptSubmit", session, rig.project, codex_transcript, prompt="Our CI runs on Buildkite.", **common
        ),
        agent="codex",
    )
    stop = payload(
        "Stop",
        session,
        rig.project,
        codex_transcript,
        stop_hook_active=False,
        last_assistant_message="Buildkite noted.",
        **common,
    )
    assert rig.send("stop", stop, agent="codex").outcome == "queued 2 turns, 1 chunk"
    assert rig.seen(session) == ["turn-7:assistant", "turn-7:user"]
    assert rig.send("stop", stop, agent="codex").outcome.startswith("queued 0 turns")


def test_a_codex_prompt_that_quotes_taps_block_is_captured_and_recalled_without_it(rig: Rig) -> None:
    session = "019a-codex-echo"
    block = f"{OPEN}\nNotes from earlier conversations with this user: background data.\n- CI: Jenkins\n{CLOSE}"
    common = {"model": "gpt-5.1-codex", "turn_id": "turn-1"}
    said = f"Our CI runs on Buildkite now.\n\n{block}"
    rig.send(
        "user-prompt-submit",
        payload("UserPromptSubmit", session, rig.project, None, prompt=said, **common),
        agent="codex",
    )
    stop = payload("Stop", session, rig.project, None, last_assistant_message=f"Noted.\n{block}", **common)
    assert rig.send("stop", stop, agent="codex").outcome == "queued 2 turns, 1 chunk"
    assert stored_anywhere(rig.rt.queue.path, OPEN.encode()) == []
    assert stored_anywhere(rig.rt.queue.path, b"Our CI runs on Buildkite now.") != []


def test_every_event_of_a_project_uses_its_git_root_as_scope(rig: Rig) -> None:
    subdir = rig.project / "services" / "api"
    subdir.mkdir(parents=True)
    session = "scope-sub"
    transcript = rig.transcript(session, cwd=subdir)
    transcript.user("The API gateway is Kong.")
    transcript.assistant("Kong, got it.")
    rig.send("stop", payload("Stop", session, subdir, transcript.path))
    with sqlite3.connect(rig.rt.queue.path) as db:
        scopes = {row[0] for row in db.execute("SELECT scope FROM seen WHERE conversation = ?", (session,))}
    assert scopes == {str(rig.project)}


def test_a_transcript_path_that_is_not_a_jsonl_file_is_refused(rig: Rig, tmp_path: Path) -> None:
    secret = tmp_path / "notes.txt"
    secret.write_text("not a transcript")
    with pytest.raises(ValueError, match="not a JSONL file"):
        rig.service.handle("stop", "claude", parse_input(payload("Stop", "s-x", rig.project, secret)))


def test_payload_reader_is_tolerant_but_needs_a_session() -> None:
    body = payload("UserPromptSubmit", "s", "/p", None, prompt="hi", future_field={"x": 1})
    assert msgspec.structs.asdict(parse_input(body))["prompt"] == "hi"
    with pytest.raises(ValueError, match="session_id"):
        parse_input(b'{"hook_event_name": "Stop"}')
    with pytest.raises(ValueError, match="not JSON"):
        parse_input(b"garbage")
    assert isinstance(parse_input(payload("Stop", "s", "/p", None, stop_hook_active=True)), HookInput)


def test_forgetting_a_scope_drops_its_sessions_rows(rig: Rig) -> None:
    rig.rt.memories.add(scope=str(rig.project), content="The user's laptop is a ThinkPad", importance=4)
    codex = payload("UserPromptSubmit", "s-forget", rig.project, None, prompt="my laptop?", turn_id="t1", model="m")
    assert rig.send("user-prompt-submit", codex, agent="codex").given
    other = rig.project.parent / "other"
    rig.send("user-prompt-submit", payload("UserPromptSubmit", "s-keep", other, None, prompt="hello"))
    assert rig.state.forget_scope(str(rig.project)) == 1
    assert rig.state.given("s-forget") == frozenset() and rig.state.take_pending("s-forget", "t1") is None
    assert rig.state.forget_scope(str(other)) == 1


def test_hook_recalls_go_through_the_interception_core_and_leave_a_why_record(rig: Rig) -> None:
    scope = str(rig.project)
    rig.rt.memories.add(scope=scope, content="The billing service deploys with Helm charts", importance=5)
    start = rig.send("session-start", payload("SessionStart", "s-why", rig.project, None, source="startup"))
    digest = rig.why.last()
    assert digest is not None and "Helm" in context(start)
    assert (digest.path, digest.scope, digest.conversation) == ("/tap/hooks/session-start", scope, "s-why")
    assert [c.outcome for c in digest.candidates if "Helm" in c.content] == ["injected"]
    prompt(rig, "s-why2", "how do we deploy billing?")  # a new session: its digest follows the prompt's recall
    record = next((r for r in rig.why.recent(5) if r.conversation == "s-why2" and "prompt" in r.path), None)
    assert record is not None and record.path == "/tap/hooks/user-prompt-submit"
    assert record.query == "how do we deploy billing?" and record.injected == 1
    assert record.conversation == "s-why2" and record.degraded == ""
    assert any(c.outcome == "injected" and "Helm" in c.content for c in record.candidates)
