"""A transcript the current Claude Code wrote (testkit/data/clients) ingests in auto mode, as it grows, once.

Current Claude Code opens its transcripts with bookkeeping lines (`api-request-route`,
`queue-operation`) before the first conversation entry; detection that read only the first line
called every such file "not a chat log", and kept calling it that. These tests read the recorded
session (two headless turns of one session, testkit/clients/record.py) the way the log-tail meets it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from bridges.logtail.detect import detect
from testkit.clients.recorded import recorded
from tests.bridges.logtail_helpers import Recorder

SESSION = recorded("claude-code") / "session.jsonl"
LINES = SESSION.read_bytes().splitlines(keepends=True)
SESSION_ID = json.loads(LINES[0])["sessionId"]
SNAPSHOT = (
    b'{"type":"file-history-snapshot","messageId":"m1","snapshot":{"trackedFileBackups":{}},"isSnapshotUpdate":false}\n'
)


@pytest.fixture
def recorder(tmp_path: Path) -> Iterator[Recorder]:
    rec = Recorder(tmp_path / "state")
    yield rec
    rec.close()


def session_file(tmp_path: Path) -> Path:
    folder = tmp_path / "projects" / "-tmp-tap-client-recording-project"
    folder.mkdir(parents=True)
    return folder / f"{SESSION_ID}.jsonl"  # as Claude Code names it


def end_of_first_exchange() -> int:
    """The index of the line after the first assistant entry."""
    kinds = [json.loads(line).get("type") for line in LINES]
    return kinds.index("assistant") + 1


def test_the_recorded_transcript_opens_with_lines_that_are_no_conversation() -> None:
    first = json.loads(LINES[0])
    assert first["type"] not in ("user", "assistant") and "uuid" not in first  # the shape that broke detection
    assert detect(LINES) == "claude-code"
    assert detect([SNAPSHOT, LINES[3]]) == "claude-code"
    assert detect([SNAPSHOT]) is None  # undecided, not "never"
    assert detect([SNAPSHOT, b'{"role": "user", "content": "hi", "sessionId": "s1", "type": "message"}']) == "jsonl"


def test_a_current_transcript_ingests_in_auto_mode_as_it_grows_and_exactly_once(
    tmp_path: Path, recorder: Recorder
) -> None:
    path = session_file(tmp_path)
    split = end_of_first_exchange()
    path.write_bytes(b"".join(LINES[:split]))
    tailer = recorder.tailer([tmp_path / "projects"], tmp_path / "state")
    assert tailer.poll(one_shot=True) == 2  # the first prompt and its reply
    assert tailer.stats.formats == {str(path): "claude-code"} and not tailer.stats.unrecognised
    with open(path, "ab") as handle:
        handle.write(b"".join(LINES[split:]))
    assert tailer.poll(one_shot=True) == 2  # only the second exchange
    assert tailer.poll(one_shot=True) == 0
    again = recorder.tailer([tmp_path / "projects"], tmp_path / "state")  # a later run: nothing new
    assert again.poll(one_shot=True) == 0
    roles = [(role, content) for _, _, _, role, content in recorder.messages()]
    assert [role for role, _ in roles] == ["user", "assistant", "user", "assistant"]
    assert roles[0][1] == "Which colour should I paint the study?" and roles[2][1] == "And the hallway, same colour?"
    assert len(recorder.seen()) == 4
    assert {conversation for _, conversation, *_ in recorder.messages()} == {SESSION_ID}


def test_a_file_that_says_nothing_yet_is_read_once_it_does(tmp_path: Path, recorder: Recorder) -> None:
    path = session_file(tmp_path)
    path.write_bytes(SNAPSHOT)  # a line of Claude Code's that names no session
    tailer = recorder.tailer([tmp_path / "projects"], tmp_path / "state")
    assert tailer.poll(one_shot=True) == 0
    assert tailer.stats.unrecognised == {str(path)}
    (warning,) = [w for w in recorder.warnings if "not a chat log" in w]
    assert str(path) in warning and "--format claude-code" in warning and "when it grows" in warning
    tailer.poll(one_shot=True)
    assert len([w for w in recorder.warnings if "not a chat log" in w]) == 1  # said once, not every pass
    with open(path, "ab") as handle:  # Claude Code writes the session
        handle.write(b"".join(LINES))
    assert tailer.poll(one_shot=True) == 4
    assert tailer.stats.formats[str(path)] == "claude-code" and not tailer.stats.unrecognised
    assert {conversation for _, conversation, *_ in recorder.messages()} == {SESSION_ID}


def test_a_file_recorded_as_no_chat_log_is_read_when_the_format_is_given(tmp_path: Path, recorder: Recorder) -> None:
    path = tmp_path / "odd.log"
    header = "".join(f"exported from the team wiki, page {n}\n" for n in range(25))  # past what detection reads
    path.write_text(header + "User: I moved to Porto.\n", encoding="utf-8")
    state = tmp_path / "state"
    auto = recorder.tailer([path], state)
    assert auto.poll(one_shot=True) == 0 and auto.stats.unrecognised == {str(path)}
    given = recorder.tailer([path], state, fmt="text")  # the same file, unchanged, its format given
    assert given.poll(one_shot=True) == 1
    assert given.stats.formats == {str(path): "text"} and not given.stats.unrecognised
    assert recorder.tailer([path], state).poll(one_shot=True) == 0  # read once, not again
