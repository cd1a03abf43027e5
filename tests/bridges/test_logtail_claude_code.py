"""Claude Code transcripts: the conversation rebuilt from a realistic session file on disk."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bridges.logtail.claude_code import ClaudeCodeParser, clean_user_text
from bridges.logtail.formats import FileContext
from bridges.logtail.lines import LogLine
from tests.bridges.logtail_helpers import Recorder
from tests.bridges.transcripts import (
    CWD,
    EXPECTED,
    NEVER,
    SESSION,
    Clock,
    assistant,
    claude_session_entries,
    jsonl_line,
    text,
    user,
    write_claude_session,
)


def age(path: Path, seconds: float = 60.0) -> None:
    """Make a file look quiet (last written `seconds` ago)."""
    then = time.time() - seconds
    os.utime(path, (then, then))


@pytest.fixture
def recorder(tmp_path: Path) -> Iterator[Recorder]:
    rec = Recorder(tmp_path / "state")
    yield rec
    rec.close()


def test_session_becomes_the_conversation_claude_code_shows(tmp_path: Path, recorder: Recorder) -> None:
    write_claude_session(tmp_path / "projects")
    tailer = recorder.tailer([tmp_path / "projects"], tmp_path / "state")
    assert tailer.poll(one_shot=True) == len(EXPECTED)
    got = recorder.messages()
    assert [(mid, role, content) for _, _, mid, role, content in got] == EXPECTED
    assert {(scope, conversation) for scope, conversation, *_ in got} == {(CWD, SESSION)}
    everything = json.dumps(got)
    for noise in NEVER:
        assert noise not in everything, noise
    first = recorder.events[0].messages[0]
    assert first.timestamp == datetime(2025, 6, 2, 9, 0, 4, tzinfo=UTC).timestamp()
    assert {e.source for e in recorder.events} == {"logtail"}
    assert set(tailer.stats.formats.values()) == {"claude-code"}  # the sub-agent file too: it adds nothing


def test_live_session_is_emitted_as_it_grows_and_only_once(tmp_path: Path, recorder: Recorder) -> None:
    entries = claude_session_entries()
    path = tmp_path / "projects" / "p" / f"{SESSION}.jsonl"
    path.parent.mkdir(parents=True)
    tailer = recorder.tailer([path], tmp_path / "state")
    cut = next(i for i, e in enumerate(entries) if e.get("uuid") == "a-plan2") + 1
    for piece in (entries[:5], entries[5:cut], entries[cut:]):
        with path.open("a", encoding="utf-8") as handle:
            handle.write("".join(jsonl_line(e) for e in piece))
        tailer.poll()
    assert [m[2] for m in recorder.messages()] == [e[0] for e in EXPECTED[:-1]]  # the last reply may grow
    age(path)
    tailer.poll()  # quiet now: the last assistant message is complete
    assert [m[2:] for m in recorder.messages()] == EXPECTED
    assert tailer.poll() == 0 and len(recorder.seen()) == len(EXPECTED)


def test_an_emitted_prompt_stays_when_it_is_edited_and_the_new_branch_follows(
    tmp_path: Path, recorder: Recorder
) -> None:
    entries = claude_session_entries()
    path = tmp_path / f"{SESSION}.jsonl"
    tailer = recorder.tailer([path], tmp_path / "state")
    cut = next(i for i, e in enumerate(entries) if e.get("uuid") == "a-flyway") + 1
    path.write_text("".join(jsonl_line(e) for e in entries[:cut]), encoding="utf-8")
    tailer.poll()
    with path.open("a", encoding="utf-8") as handle:
        handle.write("".join(jsonl_line(e) for e in entries[cut:]))
    age(path)
    tailer.poll()
    ids = [m[2] for m in recorder.messages()]
    assert ids[:4] == [e[0] for e in EXPECTED[:4]]
    # the prompt was on the live branch at the first checkpoint; its reply was still being written
    # (held back), and by the next checkpoint the prompt had been edited, so the reply is dropped
    assert ids[4:5] == ["u-flyway"]
    assert ids[5:] == [e[0] for e in EXPECTED[4:]]


def test_resumed_session_that_starts_with_a_compaction_keeps_its_summary(tmp_path: Path, recorder: Recorder) -> None:
    entries = claude_session_entries()
    start = next(i for i, e in enumerate(entries) if e.get("uuid") == "b-compact")
    path = tmp_path / "projects" / "p" / f"{SESSION}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(jsonl_line(e) for e in entries[start:]), encoding="utf-8")
    recorder.tailer([tmp_path / "projects"], tmp_path / "state").poll(one_shot=True)
    got = recorder.messages()
    assert got[0][2] == "u-summary" and got[0][3] == "assistant" and "Ana migrates billing" in got[0][4]
    assert [m[2] for m in got[1:]] == [e[0] for e in EXPECTED[6:]]


def test_long_session_with_a_small_index_keeps_order_and_merges_messages() -> None:
    ctx = FileContext(path=Path("s.jsonl"), scope="proj", conversation="s")
    parser = ClaudeCodeParser(ctx, max_nodes=7)
    lines: list[bytes] = []
    parent = None
    tick = Clock()
    for i in range(40):
        u = user(f"u{i}", parent, f"I moved box number {i} to the attic.", tick)
        a1 = assistant(f"a{i}x", f"u{i}", f"msg{i}", text(f"Box {i} is noted."), tick)
        a2 = assistant(f"a{i}y", f"a{i}x", f"msg{i}", text(f"Anything else about box {i}?"), tick)
        lines += [jsonl_line(e).encode() for e in (u, a1, a2)]
        parent = f"a{i}y"
    emitted = []
    offset = 0
    for number, raw in enumerate(lines, 1):
        assert parser.feed(LogLine(raw.rstrip(b"\n"), offset, offset + len(raw)), number) is None
        offset += len(raw)
        if parser.want_checkpoint():
            emitted += [m for e in parser.take(final=False) for m in e.messages]
    emitted += [m for e in parser.take(final=True) for m in e.messages]
    assert [m.id for m in emitted] == [x for i in range(40) for x in (f"u{i}", f"a{i}x")]
    assert emitted[1].content == "Box 0 is noted.\n\nAnything else about box 0?"


def test_command_noise_is_removed_and_real_text_kept() -> None:
    assert clean_user_text("<command-name>/clear</command-name>\n<command-args></command-args>") == ""
    assert clean_user_text("<local-command-stdout>ok</local-command-stdout>") == ""
    assert clean_user_text("[Request interrupted by user for tool use]") == ""
    assert clean_user_text("<bash-input>ls</bash-input>") == ""
    kept = "<system-reminder>file changed</system-reminder>Please keep the tests fast."
    assert clean_user_text(kept) == "Please keep the tests fast."
    assert clean_user_text("Use <b>bold</b> in the docs") == "Use <b>bold</b> in the docs"


def test_broken_and_odd_lines_are_reported_not_fatal(tmp_path: Path, recorder: Recorder) -> None:
    entries = claude_session_entries()
    path = tmp_path / f"{SESSION}.jsonl"
    body = [jsonl_line(e) for e in entries]
    body.insert(6, '{"type":"assistant","uuid":"half-written", "message": {"content": [\n')
    body.insert(9, '{"type":"user","uuid":"odd","message":{"content":42}}\n')
    body.insert(11, "\n")
    path.write_text("".join(body), encoding="utf-8")
    tailer = recorder.tailer([path], tmp_path / "state")
    tailer.poll(one_shot=True)
    assert [m[2] for m in recorder.messages()] == [e[0] for e in EXPECTED]
    assert dict(tailer.stats.skipped) == {"broken JSON": 1, "unexpected JSON shape": 1}
    assert recorder.warnings == [
        f"{path}:7: broken JSON; line skipped",
        f"{path}:10: unexpected JSON shape; line skipped",
    ]


def test_a_session_in_a_subdirectory_is_filed_under_its_repository_like_the_hooks_do(
    tmp_path: Path, recorder: Recorder
) -> None:
    from bridges.hooks.scope import hook_scope

    repo = tmp_path / "work" / "shop"
    (repo / ".git").mkdir(parents=True)
    sub = repo / "services" / "api"
    sub.mkdir(parents=True)
    at = Clock()
    lines = [
        user("u-1", None, "we deploy the api with fly.io", at, cwd=str(sub)),
        assistant("a-1", "u-1", "msg_1", text("Noted."), at, cwd=str(sub)),
    ]
    folder = tmp_path / "projects" / "-work-shop-services-api"
    folder.mkdir(parents=True)
    path = folder / "s.jsonl"
    path.write_text("".join(jsonl_line(e) for e in lines), encoding="utf-8")
    age(path)
    tailer = recorder.tailer([tmp_path / "projects"], tmp_path / "state")
    assert tailer.poll(one_shot=True) == 2
    scopes = {scope for scope, *_ in recorder.messages()}
    assert scopes == {str(repo)} == {hook_scope("", str(sub))}
