"""Agent hooks without a server: each `tap hook` process uses the embedded store itself.

A scripted session: prompt → the transcript grows → Stop (queues the turns, closes the chunk and
starts a detached `tap hooks drain`) → extraction → the next prompt's additionalContext holds the
memory; not again in the session; again after /clear.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from store.lock import DataDirLock
from tap.errors import StoreError
from testkit.agent_hooks import HookRun, Transcript, payload, run_hook
from testkit.waits import wait_until

pytestmark = pytest.mark.slow
STORE = {"chromadb", "onnxruntime", "tokenizers"}


def extraction_finished(home: Path) -> bool:
    """A chunk was extracted, none waits, and no process holds the store (the detached Stop and the
    drain it started are done)."""
    try:
        with sqlite3.connect(home / "queue.db") as db:
            waiting = db.execute("SELECT count(*) FROM chunks WHERE state IN ('queued', 'running')").fetchone()[0]
            done = db.execute("SELECT count(*) FROM chunks WHERE state = 'done'").fetchone()[0]
    except sqlite3.OperationalError:
        return False  # the detached Stop has not made its queue yet
    if waiting or not done:
        return False
    lock = DataDirLock(home)
    try:
        lock.acquire()
    except StoreError:
        return False
    lock.release()
    return True


def test_scripted_session_without_a_server(isolated_home: Path, tmp_path: Path) -> None:
    project = tmp_path / "garden"
    (project / ".git").mkdir(parents=True)
    session = "b2f1e0aa-embedded"
    transcript = Transcript(tmp_path / "projects" / "-garden" / f"{session}.jsonl", session, project)

    def hook(event: str, name: str, env: dict[str, str] | None = None, **fields: object) -> HookRun:
        body = payload(name, session, project, transcript.path, **fields)
        run = run_hook(event, body, home=isolated_home, env=env)
        assert run.returncode == 0, run.stderr
        return run

    said = "My allotment is in Leith and I grow rhubarb there."
    assert hook("user-prompt-submit", "UserPromptSubmit", prompt=said).stdout == b""
    transcript.user(said)
    transcript.assistant("Rhubarb in Leith, lovely.")
    stop = hook("stop", "Stop", env={"PYTHONPROFILEIMPORTTIME": "1"}, stop_hook_active=False)
    imported = {line.split("|")[-1].strip().split(".")[0] for line in stop.stderr.decode().splitlines() if "|" in line}
    assert stop.stdout == b"" and "bridges" in imported
    assert not imported & STORE, sorted(imported & STORE)  # only the queue: the store is the drain's to open
    wait_until(lambda: extraction_finished(isolated_home), within=120, what="the detached drain to finish")

    question = "where is my allotment?"
    answer = hook("user-prompt-submit", "UserPromptSubmit", prompt=question)
    assert "Leith" in answer.context()
    assert hook("user-prompt-submit", "UserPromptSubmit", prompt=question).stdout == b""
    cleared = hook("session-start", "SessionStart", source="clear")
    assert "Leith" in cleared.context()
    assert not (isolated_home / "tap.log").exists()  # nothing failed on the way
