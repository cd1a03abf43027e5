"""Forgetting files that are gone: logtail.db keeps records only while their files exist under the roots."""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.bridges.logtail_helpers import Recorder


@pytest.fixture
def recorder(tmp_path: Path) -> Iterator[Recorder]:
    rec = Recorder(tmp_path / "state")
    yield rec
    rec.close()


def chat(tag: str, count: int) -> str:
    """Text-format exchanges about `tag`, two lines each."""
    return "".join(f"User: {tag} fact number {i} is true.\nAssistant: Noted {tag} {i}.\n" for i in range(count))


def write(path: Path, tag: str, count: int = 1) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(chat(tag, count), encoding="utf-8")
    return path


def tracked(tmp_path: Path) -> list[str]:
    """The paths logtail.db holds records for, read straight from the file."""
    with sqlite3.connect(tmp_path / "state" / "logtail.db") as db:
        return sorted(row[0] for row in db.execute("SELECT path FROM files"))


def test_a_deleted_file_is_forgotten_and_read_from_the_start_when_it_comes_back(
    tmp_path: Path, recorder: Recorder, caplog: pytest.LogCaptureFixture
) -> None:
    logs = tmp_path / "logs"
    first, second = write(logs / "a.txt", "alpha", 2), write(logs / "b.txt", "beta")
    recorder.tailer([logs], tmp_path / "state").poll(one_shot=True)
    assert tracked(tmp_path) == [str(first), str(second)]
    first.unlink()
    tailer = recorder.tailer([logs], tmp_path / "state")
    with caplog.at_level(logging.INFO, logger="tap.logtail"):
        tailer.poll(one_shot=True)
    assert tracked(tmp_path) == [str(second)] and tailer.stats.files_forgotten == 1
    assert f"{first} is gone" in caplog.text
    tailer.poll(one_shot=True)  # nothing more to forget
    assert tailer.stats.files_forgotten == 1 and tailer.stats.lines == 0
    write(first, "gamma", 3)
    tailer.poll(one_shot=True)
    assert tailer.stats.lines == 6  # every line of the new file, none of b.txt
    assert tracked(tmp_path) == [str(first), str(second)]
    assert [m[4] for m in recorder.messages()][-6:] == [
        line.split(": ", 1)[1] for line in chat("gamma", 3).splitlines()
    ]


def test_only_records_under_the_roots_of_this_run_are_forgotten(tmp_path: Path, recorder: Recorder) -> None:
    mine, theirs = write(tmp_path / "mine" / "x.txt", "mine"), write(tmp_path / "theirs" / "x.txt", "theirs")
    recorder.tailer([tmp_path / "mine", tmp_path / "theirs"], tmp_path / "state").poll(one_shot=True)
    mine.unlink()
    theirs.unlink()
    tailer = recorder.tailer([tmp_path / "mine"], tmp_path / "state")
    tailer.poll(one_shot=True)
    assert tracked(tmp_path) == [str(theirs)] and tailer.stats.files_forgotten == 1
    recorder.tailer([theirs], tmp_path / "state").poll(one_shot=True)  # a file root that is gone: itself
    assert tracked(tmp_path) == []


def test_a_glob_covers_only_the_paths_it_matches(tmp_path: Path, recorder: Recorder) -> None:
    logs = tmp_path / "logs"
    top, other, deep = write(logs / "a.txt", "a"), write(logs / "c.log", "c"), write(logs / "sub" / "d.txt", "d")
    recorder.tailer([logs], tmp_path / "state").poll(one_shot=True)
    for path in (top, other, deep):
        path.unlink()
    tailer = recorder.tailer([str(logs / "*.txt")], tmp_path / "state")
    tailer.poll(one_shot=True)  # no file matches any more: reported, and a.txt is forgotten
    assert tracked(tmp_path) == [str(other), str(deep)] and tailer.stats.files_forgotten == 1
    recorder.tailer([str(logs / "**" / "*.txt")], tmp_path / "state").poll(one_shot=True)
    assert tracked(tmp_path) == [str(other)]


def test_a_root_that_is_not_there_forgets_nothing(tmp_path: Path, recorder: Recorder) -> None:
    disk = tmp_path / "disk" / "logs"  # as if on a disk that is unmounted, then mounted again
    kept = write(disk / "a.txt", "a", 2)
    recorder.tailer([disk], tmp_path / "state").poll(one_shot=True)
    disk.rename(tmp_path / "elsewhere")
    for root in (str(disk), str(disk / "*.txt")):
        tailer = recorder.tailer([root], tmp_path / "state")
        tailer.poll(one_shot=True)
        assert tailer.stats.files_forgotten == 0 and root in tailer.stats.errors
    assert tracked(tmp_path) == [str(kept)]
    (tmp_path / "elsewhere").rename(disk)
    again = recorder.tailer([disk], tmp_path / "state")
    again.poll(one_shot=True)
    assert again.stats.lines == 0 and len(recorder.seen()) == 4  # it goes on where it was


def test_a_renamed_file_keeps_its_record(tmp_path: Path, recorder: Recorder) -> None:
    logs = tmp_path / "logs"
    old = write(logs / "a.txt", "a", 2)
    recorder.tailer([logs], tmp_path / "state").poll(one_shot=True)
    new = old.rename(logs / "b.txt")
    tailer = recorder.tailer([logs], tmp_path / "state")
    tailer.poll(one_shot=True)
    assert tailer.stats.files_forgotten == 0 and tailer.stats.lines == 0 and len(tracked(tmp_path)) == 1
    with new.open("a", encoding="utf-8") as handle:
        handle.write("User: one more fact.\nAssistant: Noted.\n")
    tailer.poll(one_shot=True)
    assert tailer.stats.lines == 2 and tracked(tmp_path) == [str(new)]


def test_a_file_replaced_at_its_path_is_forgotten_once_it_is_not_seen(tmp_path: Path, recorder: Recorder) -> None:
    logs = tmp_path / "logs"
    current = write(logs / "chat.log", "day one", 2)
    root = str(logs / "*.log")  # rotated copies (chat.log.1) are not watched
    recorder.tailer([root], tmp_path / "state").poll(one_shot=True)
    current.rename(logs / "chat.log.1")
    write(current, "day two")
    tailer = recorder.tailer([root], tmp_path / "state")
    tailer.poll(one_shot=True)
    assert tailer.stats.files_forgotten == 1 and tracked(tmp_path) == [str(current)]
    with sqlite3.connect(tmp_path / "state" / "logtail.db") as db:
        (ino,) = db.execute("SELECT ino FROM files").fetchone()
    assert ino == current.stat().st_ino


def test_a_file_that_cannot_be_looked_at_is_kept(tmp_path: Path, recorder: Recorder) -> None:
    logs = tmp_path / "logs"
    path = write(logs / "a.txt", "a")
    recorder.tailer([logs], tmp_path / "state").poll(one_shot=True)
    path.unlink()
    path.symlink_to(path)  # stat fails with "too many levels of symbolic links", not "no such file"
    tailer = recorder.tailer([logs], tmp_path / "state")
    tailer.poll(one_shot=True)
    assert str(path) in tailer.stats.errors
    assert tailer.stats.files_forgotten == 0 and tracked(tmp_path) == [str(path)]


@pytest.mark.skipif(os.geteuid() == 0, reason="as root, permissions do not stop stat")
def test_a_file_in_a_folder_without_permission_is_kept(tmp_path: Path, recorder: Recorder) -> None:
    locked = tmp_path / "logs" / "locked"
    path = write(locked / "a.txt", "a")
    recorder.tailer([tmp_path / "logs"], tmp_path / "state").poll(one_shot=True)
    locked.chmod(0)
    try:
        tailer = recorder.tailer([tmp_path / "logs"], tmp_path / "state")
        tailer.poll(one_shot=True)
    finally:
        locked.chmod(0o755)
    assert tailer.stats.files_forgotten == 0 and tracked(tmp_path) == [str(path)]


def test_a_pass_stopped_half_way_forgets_nothing(tmp_path: Path, recorder: Recorder) -> None:
    logs = tmp_path / "logs"
    gone, kept = write(logs / "a.txt", "a"), write(logs / "b.txt", "b")
    recorder.tailer([logs], tmp_path / "state").poll(one_shot=True)
    gone.unlink()
    tailer = recorder.tailer([logs], tmp_path / "state")
    tailer.stop_requested = lambda: True
    tailer.poll(one_shot=True)
    assert tailer.stats.files_forgotten == 0 and tracked(tmp_path) == [str(gone), str(kept)]
    tailer.stop_requested = lambda: False
    tailer.poll(one_shot=True)
    assert tailer.stats.files_forgotten == 1 and tracked(tmp_path) == [str(kept)]
