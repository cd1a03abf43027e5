"""Schema migrations (tap.sqlite.migrate): numbered steps per part of a file, run once and in
order; and every SQLite file tap keeps, created as tap wrote it before numbered migrations (the
DDL below is a frozen copy of that code's), opens and keeps its rows."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bridges.hooks.hook_db import HookState
from bridges.logtail.progress_db import OffsetStore
from bridges.telegram.db import TelegramDB
from store.lexical import LexicalIndex
from tap.errors import StoreError
from tap.extract.consolidation import Journal
from tap.extract.costs import CostLedger
from tap.ingest.capture import TurnLog
from tap.ingest.queue import ChunkQueue
from tap.sqlite import connect, migrate, schema_version, transaction
from testkit.waits import finishes


def test_steps_run_once_in_order_and_a_new_step_runs_on_an_older_file(tmp_path: Path) -> None:
    ran: list[str] = []
    first = (("CREATE TABLE notes (text TEXT NOT NULL)", "INSERT INTO notes VALUES ('kept')"),)
    db = connect(tmp_path / "x.db")
    assert migrate(db, "notes", first) == 0 and schema_version(db, "notes") == 1
    assert migrate(db, "notes", first) == 1  # nothing left to run: the INSERT is not repeated

    def second(db: sqlite3.Connection) -> None:
        ran.append("second")
        db.execute("ALTER TABLE notes ADD COLUMN at REAL NOT NULL DEFAULT 0")

    assert migrate(db, "notes", (*first, second)) == 1 and ran == ["second"]
    assert migrate(db, "other", (("CREATE TABLE other (x)",),)) == 0  # another part of the same file
    assert (schema_version(db, "notes"), schema_version(db, "other")) == (2, 1)
    assert db.execute("SELECT text, at FROM notes").fetchall() == [("kept", 0)]
    db.close()


def test_a_failing_step_leaves_the_file_at_the_step_before(tmp_path: Path) -> None:
    db = connect(tmp_path / "x.db")
    migrate(db, "notes", (("CREATE TABLE notes (text TEXT)",),))
    broken = (("CREATE TABLE notes (text TEXT)",), ("ALTER TABLE notes ADD COLUMN a", "SELECT * FROM nowhere"))
    with pytest.raises(sqlite3.OperationalError):
        migrate(db, "notes", broken)
    assert schema_version(db, "notes") == 1
    assert [row[1] for row in db.execute("PRAGMA table_info(notes)")] == ["text"]
    db.close()


def test_a_file_from_a_newer_tap_is_refused_by_name(tmp_path: Path) -> None:
    db = connect(tmp_path / "newer.db")
    migrate(db, "notes", (("CREATE TABLE notes (text TEXT)",), ("CREATE TABLE more (x)",)))
    with pytest.raises(StoreError, match=r"newer\.db: its notes tables are at schema step 2, and this tap knows 1"):
        migrate(db, "notes", (("CREATE TABLE notes (text TEXT)",),))
    db.close()


def test_a_file_already_up_to_date_takes_no_write_lock(tmp_path: Path) -> None:
    steps = (("CREATE TABLE notes (text TEXT)",),)
    writer = connect(tmp_path / "x.db")
    migrate(writer, "notes", steps)
    other = sqlite3.connect(tmp_path / "x.db", isolation_level=None, timeout=30, check_same_thread=False)
    with transaction(writer):  # another process is writing: an open must not wait for it
        writer.execute("INSERT INTO notes VALUES ('busy')")
        finishes(lambda: migrate(other, "notes", steps), within=10, what="opening an up-to-date file")
    other.close()
    writer.close()


# -- every file as tap wrote it before numbered migrations -------------------------------------------

QUEUE_DDL = """
CREATE TABLE IF NOT EXISTS seen (scope TEXT NOT NULL, conversation TEXT NOT NULL, turn_id TEXT NOT NULL,
    PRIMARY KEY (scope, conversation, turn_id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS windows (scope TEXT NOT NULL, conversation TEXT NOT NULL, source TEXT NOT NULL,
    turns BLOB NOT NULL, covered INTEGER NOT NULL, updated_at REAL NOT NULL, PRIMARY KEY (scope, conversation));
CREATE TABLE IF NOT EXISTS chunks (id TEXT PRIMARY KEY, scope TEXT NOT NULL, conversation TEXT NOT NULL,
    source TEXT NOT NULL, payload BLOB NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
    next_at REAL NOT NULL, last_error TEXT NOT NULL DEFAULT '', outcome TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL, updated_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS chunks_ready ON chunks (state, next_at);
CREATE INDEX IF NOT EXISTS chunks_claim ON chunks (state, created_at, id);
CREATE TABLE IF NOT EXISTS llm_calls (at REAL NOT NULL, day TEXT NOT NULL, provider TEXT NOT NULL,
    model TEXT NOT NULL, purpose TEXT NOT NULL, input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL, cost_usd REAL NOT NULL);
CREATE INDEX IF NOT EXISTS llm_calls_day ON llm_calls (day);
INSERT INTO seen VALUES ('ann', 'c1', 't1');
INSERT INTO llm_calls VALUES (1.0, '1970-01-01', 'anthropic', 'm', 'extract', 10, 5, 0.25);
"""
TURNLOG_DDL = """
CREATE TABLE IF NOT EXISTS exchanges (seq INTEGER PRIMARY KEY AUTOINCREMENT, scope TEXT NOT NULL,
    conversation TEXT NOT NULL, user_turn_id TEXT NOT NULL, recorded_at REAL NOT NULL, record BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS exchanges_conv ON exchanges (scope, conversation);
CREATE TABLE IF NOT EXISTS continuity (key TEXT PRIMARY KEY, conversation TEXT NOT NULL, seen_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS continuity_seen ON continuity (seen_at);
INSERT INTO continuity VALUES ('k', 'c1', 1.0);
"""
JOURNAL_DDL = """
CREATE TABLE IF NOT EXISTS steps (id TEXT PRIMARY KEY, scope TEXT NOT NULL, action TEXT NOT NULL,
    payload BLOB NOT NULL, at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS runs (scope TEXT PRIMARY KEY, finished_at REAL NOT NULL);
INSERT INTO runs VALUES ('ann', 123.0);
"""
OFFSETS_DDL = """
CREATE TABLE IF NOT EXISTS files (
    dev INTEGER NOT NULL, ino INTEGER NOT NULL, path TEXT NOT NULL,
    head_len INTEGER NOT NULL, head_hash TEXT NOT NULL,
    offset INTEGER NOT NULL, lines INTEGER NOT NULL, mark TEXT NOT NULL,
    seen_size INTEGER NOT NULL, seen_mtime INTEGER NOT NULL,
    format TEXT NOT NULL, scope TEXT NOT NULL, conversation TEXT NOT NULL,
    parser_state BLOB NOT NULL, updated_at REAL NOT NULL,
    PRIMARY KEY (dev, ino)
);
INSERT INTO files VALUES (1, 2, '/logs/a.jsonl', 3, 'h', 40, 2, '', 40, 7, 'jsonl', 'ann', 'c1', '{}', 1.0);
"""
HOOKS_DDL = (
    OFFSETS_DDL
    + """
CREATE TABLE IF NOT EXISTS fired (agent TEXT NOT NULL, event TEXT NOT NULL, at REAL NOT NULL,
    outcome TEXT NOT NULL, count INTEGER NOT NULL, PRIMARY KEY (agent, event)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS given (session TEXT NOT NULL, memory_id TEXT NOT NULL, at REAL NOT NULL,
    PRIMARY KEY (session, memory_id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS sessions (session TEXT PRIMARY KEY, agent TEXT NOT NULL, scope TEXT NOT NULL,
    cwd TEXT NOT NULL, seen_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS pending (session TEXT NOT NULL, turn_id TEXT NOT NULL, prompt TEXT NOT NULL,
    at REAL NOT NULL, PRIMARY KEY (session, turn_id)) WITHOUT ROWID;
INSERT INTO given VALUES ('s1', 'm1', 1.0);
"""
)
TELEGRAM_DDL = """
CREATE TABLE IF NOT EXISTS seen_updates (update_id INTEGER PRIMARY KEY, seen_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS refused (who TEXT PRIMARY KEY, at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS private_next (scope TEXT NOT NULL, user_id INTEGER NOT NULL, at REAL NOT NULL,
    PRIMARY KEY (scope, user_id));
CREATE TABLE IF NOT EXISTS turns (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation TEXT NOT NULL,
    message_id INTEGER NOT NULL,
    user_id INTEGER NOT NULL,
    author TEXT NOT NULL,
    user_text TEXT NOT NULL,
    reply_text TEXT,
    status TEXT NOT NULL CHECK (status IN ('pending', 'answered')),
    created_at REAL NOT NULL,
    answered_at REAL,
    UNIQUE (conversation, message_id));
CREATE INDEX IF NOT EXISTS turns_by_conversation ON turns (conversation, id);
INSERT INTO refused VALUES ('user 7', 1.0);
"""
LEXICAL_DDL = """
CREATE VIRTUAL TABLE IF NOT EXISTS memories USING fts5(id UNINDEXED, scopekey, content, tokenize='porter unicode61');
CREATE TABLE IF NOT EXISTS entries (id TEXT PRIMARY KEY, fts_row INTEGER NOT NULL, scope TEXT NOT NULL,
    record BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS entries_scope ON entries (scope);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO memories (rowid, id, scopekey, content) VALUES (1, 'm1', 'k', 'Ann keeps bees');
INSERT INTO entries VALUES ('m1', 1, 'ann', x'7b7d');
INSERT INTO meta VALUES ('clean_total', '1');
"""

Opener = Callable[[Path], Any]
FILES: dict[str, tuple[str, list[tuple[str, Opener]], str, list[Any]]] = {
    # file: (its DDL and rows as written before migrations, [(part, opener)], a query, its rows after)
    "queue.db": (
        QUEUE_DDL,
        [("queue", ChunkQueue), ("costs", CostLedger)],
        "SELECT (SELECT count(*) FROM seen), (SELECT sum(cost_usd) FROM llm_calls)",
        [(1, 0.25)],
    ),
    "turnlog.db": (TURNLOG_DDL, [("turnlog", TurnLog)], "SELECT conversation FROM continuity", [("c1",)]),
    "consolidate.db": (JOURNAL_DDL, [("consolidation", Journal)], "SELECT * FROM runs", [("ann", 123.0)]),
    "logtail.db": (OFFSETS_DDL, [("offsets", OffsetStore)], "SELECT path, offset FROM files", [("/logs/a.jsonl", 40)]),
    "hooks.db": (
        HOOKS_DDL,
        [("hooks", HookState), ("offsets", OffsetStore)],
        "SELECT (SELECT count(*) FROM given), (SELECT count(*) FROM files)",
        [(1, 1)],
    ),
    "telegram.db": (TELEGRAM_DDL, [("telegram", TelegramDB)], "SELECT who FROM refused", [("user 7",)]),
    # an index from before the vector column: it gets the column, and keeps its rows and notes
    "lexical-memories.db": (
        LEXICAL_DDL,
        [("lexical", LexicalIndex)],
        "SELECT id, vector, (SELECT value FROM meta) FROM entries",
        [("m1", None, "1")],
    ),
}


@pytest.mark.parametrize("name", sorted(FILES))
def test_a_file_from_before_migrations_upgrades_in_place_and_keeps_its_rows(tmp_path: Path, name: str) -> None:
    ddl, parts, query, rows = FILES[name]
    path = tmp_path / name
    with sqlite3.connect(path) as db:
        db.executescript(ddl)
    db.close()
    for _ in range(2):  # upgraded once; opened again, nothing changes
        for _, opener in parts:
            opener(path).close()
    with sqlite3.connect(path) as db:
        assert db.execute(query).fetchall() == rows
        for part, _ in parts:
            assert schema_version(db, part) >= 1, part
    db.close()


def test_the_lexical_index_opened_by_two_threads_at_once_migrates_once(tmp_path: Path) -> None:
    path = tmp_path / "lexical.db"
    with sqlite3.connect(path) as db:
        db.executescript(LEXICAL_DDL)
    db.close()
    errors: list[BaseException] = []

    def open_close() -> None:
        try:
            LexicalIndex(path).close()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_close) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with sqlite3.connect(path) as db:
        assert [row[1] for row in db.execute("PRAGMA table_info(entries)")].count("vector") == 1
    db.close()
