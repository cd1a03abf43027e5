"""Exactly-once incremental reading: offsets, appends, partial lines, truncation, rotation, crashes."""

from __future__ import annotations

import os
import random
import shutil
import threading
import time
from collections.abc import Iterator, Sequence
from io import BytesIO
from pathlib import Path

import pytest

from bridges.logtail.lines import read_lines
from tap.records import IngestEvent
from tests.bridges.logtail_helpers import Recorder
from tests.bridges.transcripts import EXPECTED, SESSION, claude_session_entries, jsonl_line


@pytest.fixture
def recorder(tmp_path: Path) -> Iterator[Recorder]:
    rec = Recorder(tmp_path / "state")
    yield rec
    rec.close()


def chat(start: int, count: int) -> str:
    """Text-format lines `User: fact n` / `Assistant: ok n`, numbered from start."""
    return "".join(
        f"User: I planted tree number {i} in Braga.\nAssistant: Tree {i} noted.\n" for i in range(start, start + count)
    )


def age(path: Path, seconds: float = 60.0) -> None:
    """Make a file look quiet (last written `seconds` ago)."""
    then = time.time() - seconds
    os.utime(path, (then, then))


def contents(recorder: Recorder) -> list[str]:
    return [m[4] for m in recorder.messages()]


def test_second_run_adds_nothing_and_appends_are_picked_up(tmp_path: Path, recorder: Recorder) -> None:
    path = tmp_path / "garden.txt"
    path.write_text(chat(0, 3), encoding="utf-8")
    first = recorder.tailer([tmp_path], tmp_path / "state")
    assert first.poll(one_shot=True) == 6
    again = recorder.tailer([tmp_path], tmp_path / "state")  # a new process: state from logtail.db only
    assert again.poll(one_shot=True) == 0 and again.stats.messages == 0 and again.stats.lines == 0
    with path.open("a", encoding="utf-8") as handle:
        handle.write(chat(3, 2))
    third = recorder.tailer([tmp_path], tmp_path / "state")
    assert third.poll(one_shot=True) == 4 and third.stats.lines == 4
    assert len(recorder.seen()) == 10 and len(contents(recorder)) == 10


def test_half_written_line_is_waited_for(tmp_path: Path, recorder: Recorder) -> None:
    path = tmp_path / "s.jsonl"
    entries = [jsonl_line(e) for e in claude_session_entries()]
    whole = "".join(entries[:6])
    path.write_text(whole + entries[6][:25], encoding="utf-8")  # a-ack is half written
    tailer = recorder.tailer([path], tmp_path / "state")
    tailer.poll(one_shot=True)
    assert [m[2] for m in recorder.messages()] == ["u-intro"]
    assert tailer.stats.skipped == {} and str(path) in tailer.stats.waiting
    with path.open("a", encoding="utf-8") as handle:
        handle.write(entries[6][25:])
    tailer.poll(one_shot=True)
    assert [m[2] for m in recorder.messages()] == ["u-intro", "a-ack"]
    assert str(path) not in tailer.stats.waiting


def test_last_line_without_newline_is_taken_once_the_file_is_quiet(tmp_path: Path, recorder: Recorder) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("User: My locker is number 42.\nAssistant: Got it, locker 42.", encoding="utf-8")
    tailer = recorder.tailer([path], tmp_path / "state")
    tailer.poll(one_shot=True)
    assert contents(recorder) == ["My locker is number 42."]
    age(path)
    tailer.poll(one_shot=True)
    assert contents(recorder) == ["My locker is number 42.", "Got it, locker 42."]
    assert tailer.poll(one_shot=True) == 0


def test_truncated_file_is_read_again_without_doubling(tmp_path: Path, recorder: Recorder) -> None:
    path = tmp_path / "chat.txt"
    path.write_text(chat(0, 5), encoding="utf-8")
    tailer = recorder.tailer([path], tmp_path / "state")
    tailer.poll(one_shot=True)
    path.write_text(chat(0, 2), encoding="utf-8")  # truncated to its first part (same inode)
    assert tailer.poll(one_shot=True) == 0
    assert any("truncated" in w for w in recorder.warnings)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(chat(5, 1))  # then written on
    assert tailer.poll(one_shot=True) == 2
    assert len(recorder.seen()) == 12


def test_file_rewritten_in_place_with_new_text_is_read_again(tmp_path: Path, recorder: Recorder) -> None:
    path = tmp_path / "chat.txt"
    path.write_text(chat(0, 3), encoding="utf-8")
    tailer = recorder.tailer([path], tmp_path / "state")
    tailer.poll(one_shot=True)
    ino = path.stat().st_ino
    with path.open("r+", encoding="utf-8") as handle:  # same size, same head, different middle
        data = handle.read()
        handle.seek(0)
        handle.write(data.replace("Tree 2 noted.", "Tree 2 died.!"))
    assert path.stat().st_ino == ino
    assert tailer.poll(one_shot=True) == 1
    assert contents(recorder)[-1] == "Tree 2 died.!" and any("rewritten" in w for w in recorder.warnings)


def test_rotation_by_rename_continues_the_old_file_and_reads_the_new_one(tmp_path: Path, recorder: Recorder) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    path = logs / "chat.log"
    path.write_text(chat(0, 2), encoding="utf-8")
    tailer = recorder.tailer([logs], tmp_path / "state")
    tailer.poll(one_shot=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(chat(2, 1))  # written just before the rotation, not read yet
    path.rename(logs / "chat.log.1")
    path.write_text("User: The new log starts with my cat Miso.\n", encoding="utf-8")
    assert tailer.poll(one_shot=True) == 3
    assert any("chat.log.1" in w and "continuing" in w for w in recorder.warnings)
    assert sorted(contents(recorder)[-3:]) == [
        "I planted tree number 2 in Braga.",
        "The new log starts with my cat Miso.",
        "Tree 2 noted.",
    ]
    assert recorder.tailer([logs], tmp_path / "state").poll(one_shot=True) == 0
    assert len(recorder.seen()) == 7


def test_copy_truncate_rotation_doubles_nothing(tmp_path: Path, recorder: Recorder) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    path = logs / "chat.log"
    path.write_text(chat(0, 3), encoding="utf-8")
    tailer = recorder.tailer([logs], tmp_path / "state")
    tailer.poll(one_shot=True)
    shutil.copy(path, logs / "chat.log.1")  # logrotate copytruncate: copy, then truncate in place
    path.write_text("", encoding="utf-8")
    assert tailer.poll(one_shot=True) == 0
    path.write_text(chat(3, 1), encoding="utf-8")
    assert tailer.poll(one_shot=True) == 2
    assert len(recorder.seen()) == 8


def test_broken_json_line_warns_with_file_and_line_and_the_rest_is_ingested(tmp_path: Path, recorder: Recorder) -> None:
    path = tmp_path / "chat.jsonl"
    path.write_text(
        '{"role": "user", "content": "I keep bees in Sintra."}\n'
        '{"role": "assistant", "content": "Bees!"\n'
        '{"role": "assistant", "content": "How many hives?"}\n',
        encoding="utf-8",
    )
    tailer = recorder.tailer([path], tmp_path / "state")
    tailer.poll(one_shot=True)
    assert recorder.warnings == [f"{path}:2: broken JSON; line skipped"]
    assert contents(recorder) == ["I keep bees in Sintra.", "How many hives?"]
    assert tailer.stats.skipped_lines[0].line == 2 and tailer.stats.skipped == {"broken JSON": 1}
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"role": "user", "content": "Three hives."}\n')
    tailer.poll(one_shot=True)
    assert contents(recorder)[-1] == "Three hives." and len(recorder.warnings) == 1


def test_unreadable_paths_are_named_and_the_rest_is_read(tmp_path: Path, recorder: Recorder) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "good.txt").write_text(chat(0, 1), encoding="utf-8")
    (logs / "gone.txt").symlink_to(tmp_path / "nowhere.txt")
    tailer = recorder.tailer([logs, tmp_path / "missing-dir", tmp_path / "*.nothing"], tmp_path / "state")
    tailer.poll(one_shot=True)
    assert len(recorder.seen()) == 2
    assert set(tailer.stats.errors) == {
        str(logs / "gone.txt"),
        str(tmp_path / "missing-dir"),
        str(tmp_path / "*.nothing"),
    }
    assert sorted(p for p, _ in recorder.errors) == sorted(tailer.stats.errors)
    (tmp_path / "missing-dir").mkdir()
    tailer.poll(one_shot=True)
    assert str(tmp_path / "missing-dir") not in tailer.stats.errors


class CrashingSink:
    """Hands events to the recorder, but dies on the n-th call (like a killed process)."""

    def __init__(self, recorder: Recorder, die_on: int) -> None:
        self.recorder = recorder
        self.calls = 0
        self.die_on = die_on

    def __call__(self, events: Sequence[IngestEvent]) -> int:
        self.calls += 1
        if self.calls == self.die_on:
            self.recorder(events[: len(events) // 2])  # half of the batch got through before the crash
            raise KeyboardInterrupt
        return self.recorder(events)


def test_crash_between_ingest_and_commit_loses_and_doubles_nothing(tmp_path: Path, recorder: Recorder) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    for n in range(4):
        (logs / f"chat{n}.txt").write_text(chat(10 * n, 3), encoding="utf-8")
    tailer = recorder.tailer([logs], tmp_path / "state")
    tailer.sink = CrashingSink(recorder, die_on=3)
    with pytest.raises(KeyboardInterrupt):
        tailer.poll(one_shot=True)
    restarted = recorder.tailer([logs], tmp_path / "state")
    restarted.poll(one_shot=True)
    assert len(recorder.seen()) == 24
    assert restarted.stats.lines == 12  # files 2 and 3 again; files 0 and 1 were committed


def test_stop_request_ends_a_long_pass_after_a_commit(tmp_path: Path, recorder: Recorder) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    for n in range(5):
        (logs / f"chat{n}.txt").write_text(chat(0, 2), encoding="utf-8")
    tailer = recorder.tailer([logs], tmp_path / "state")
    tailer.stop_requested = lambda: len(tailer.stats.files) >= 2
    tailer.poll(one_shot=True)
    assert len(tailer.stats.files) == 2
    tailer.stop_requested = lambda: False
    tailer.poll(one_shot=True)
    assert len(recorder.seen()) == 20


def test_concurrent_appends_while_following(tmp_path: Path, recorder: Recorder) -> None:
    """A writer appends a session in random pieces (lines split anywhere) while the tailer polls."""
    path = tmp_path / "projects" / "p" / f"{SESSION}.jsonl"
    path.parent.mkdir(parents=True)
    path.touch()
    data = "".join(jsonl_line(e) for e in claude_session_entries()).encode()
    rng = random.Random(7)
    done = threading.Event()

    def writer() -> None:
        position = 0
        while position < len(data):
            step = rng.randint(1, 700)
            with path.open("ab") as handle:
                handle.write(data[position : position + step])
            position += step
            time.sleep(rng.random() * 0.004)  # a writer at its own pace, racing the polls (not a wait)
        done.set()

    tailer = recorder.tailer([tmp_path / "projects"], tmp_path / "state")
    thread = threading.Thread(target=writer)
    thread.start()
    polls = 0
    while not done.is_set():
        tailer.poll()
        polls += 1
    thread.join()
    age(path)
    tailer.poll()
    ids = [m[2] for m in recorder.messages()]
    assert polls > 5
    assert len(ids) == len(set(ids))  # nothing twice
    # nothing lost, in order, messages whole; the edited prompt may have been emitted while live
    assert [i for i in ids if i != "u-flyway"] == [e[0] for e in EXPECTED]
    assert tailer.stats.skipped == {}  # no half line was ever parsed


def test_read_lines_bounds_memory_for_a_huge_line() -> None:
    data = b"short\n" + b"x" * 5000 + b"\nlast\npartial"
    lines = list(read_lines(BytesIO(data), 0, block=64, max_line=1000))
    assert [(line.data, line.start, line.end) for line in lines] == [
        (b"short", 0, 6),
        (None, 6, 5007),
        (b"last", 5007, 5012),
    ]
    assert list(read_lines(BytesIO(data), 5007, take_partial=True))[-1].data == b"partial"
