"""The one way tap opens, writes and migrates its SQLite files: WAL, usable from worker threads,
created with their folder, one transaction helper, one schema migration helper.

Every SQLite file of tap goes through here (the queue and cost ledger, the turn log, the
consolidation journal, the lexical index, the log-tail offsets, the hook state, the Telegram
history). Each user of a database still serialises its own access with a lock; WAL lets a reader
in one process (e.g. `tap status`) look while `tap serve` writes.

Schemas change only by `migrate`: each part of a file (the tables one module owns) has a list of
numbered steps, the file records the number it has reached per part, and opening it runs the
missing ones, in order, in one transaction. A part's first step is written so that it also
brings a file from before migrations (tables made with CREATE ... IF NOT EXISTS, no number
recorded) to that step without losing a row. Steps are never edited once released: a change
is a new step at the end. The number is kept per part in a table (`schema_versions`), not in
PRAGMA user_version, because two modules own tables in one file (queue.db: the queue and the
cost ledger; hooks.db: the hook state and the hooks' transcript offsets).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import msgspec

from tap.errors import StoreError

_ROWS: msgspec.json.Decoder[list[list[Any]]] = msgspec.json.Decoder(list[list[Any]])


def _sqlite_has_json() -> bool:
    """Whether this SQLite has its JSON functions (built in since 3.38, optional before)."""
    db = sqlite3.connect(":memory:")
    try:
        db.execute("SELECT json_group_array(json_array(1))").fetchone()
    except sqlite3.OperationalError:
        return False
    finally:
        db.close()
    return True


_HAS_JSON = _sqlite_has_json()


def connect(path: Path, *, synchronous: str = "NORMAL") -> sqlite3.Connection:
    """An autocommit connection in WAL mode (explicit BEGIN for transactions: `transaction`). A new
    file is created readable by its owner only (0600; SQLite gives its -wal and -shm files the same
    mode), whatever the process's umask: `tap ingest` opens the data dir's files without the server."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        with contextlib.suppress(FileExistsError):
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA synchronous={synchronous}")
    return db


@contextmanager
def transaction(
    db: sqlite3.Connection, mode: Literal["DEFERRED", "IMMEDIATE"] = "IMMEDIATE"
) -> Iterator[sqlite3.Connection]:
    """One write transaction: committed when the block ends, rolled back when it raises.
    IMMEDIATE (the default) takes the write lock at once, so two writers never deadlock on an
    upgrade from a read.

    A Ctrl-C is raised between two bytecodes, so it can land just after BEGIN ran or after a
    COMMIT that failed: whatever raised, a transaction still open is rolled back, or the next
    BEGIN on this connection would fail with "cannot start a transaction within a transaction"."""
    try:
        db.execute(f"BEGIN {mode}")
        yield db
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


Step = tuple[str, ...] | Callable[[sqlite3.Connection], None]
"""One migration step: SQL statements, or a function given the connection (inside the transaction)."""


def schema_version(db: sqlite3.Connection, part: str) -> int:
    """The step a part of this file has reached (0: none recorded)."""
    try:
        row = db.execute("SELECT version FROM schema_versions WHERE part = ?", (part,)).fetchone()
    except sqlite3.OperationalError:  # no such table: nothing was ever recorded in this file
        return 0
    return int(row[0]) if row else 0


def migrate(db: sqlite3.Connection, part: str, steps: Sequence[Step]) -> int:
    """Bring `part`'s tables in this file up to the last of `steps`: the steps it has not reached
    run in order, in one write transaction (two processes opening the file migrate it once);
    returns the step the file was at. StoreError when the file is further than `steps` (written
    by a newer tap)."""
    found = schema_version(db, part)
    if found == len(steps):
        return found  # nothing to do: no write lock taken
    with transaction(db):
        db.execute("CREATE TABLE IF NOT EXISTS schema_versions (part TEXT PRIMARY KEY, version INTEGER NOT NULL)")
        found = schema_version(db, part)
        if found > len(steps):
            where = db.execute("PRAGMA database_list").fetchone()[2]
            raise StoreError(
                f"{where}: its {part} tables are at schema step {found}, and this tap knows {len(steps)}: "
                "the file was written by a newer tap (upgrade tap, or move the file away to start it anew)"
            )
        for step in steps[found:]:
            if callable(step):
                step(db)
            else:
                for statement in step:
                    db.execute(statement)
        db.execute("INSERT OR REPLACE INTO schema_versions (part, version) VALUES (?, ?)", (part, len(steps)))
    return found


def exact_real(expression: str) -> str:
    """SQL for a REAL as text that float() turns back into the same double. SQLite 3.40's own text
    of a double keeps 15 digits, and its printf with 17 loses the last one at large exponents;
    18 digits with the '!' flag round-trip every double (tests/tap/test_sqlite_rows.py)."""
    return f"printf('%!.18g', {expression})"


def rows_at_once(
    db: sqlite3.Connection,
    columns: str,
    query: str,
    params: Sequence[Any] = (),
    decoder: msgspec.json.Decoder[Any] = _ROWS,
) -> Any:
    """The rows of `query`, each as the list of `columns` (SQL over the query's result columns),
    read in one step: SQLite puts them in one JSON array, so the calling thread lets go of the
    GIL and takes it back once, not once per row.

    Python's sqlite3 lets go of the GIL around every step, i.e. every row, and a thread that wants
    it back waits for the holder's switch interval. Under load the event loop holds it most of
    the time, so a recall reading a few hundred rows one by one would spend most of its time
    waiting (bench/contention.py measures both ways). Idle, this way costs a little more.

    Each column's value must survive JSON: text, integers and NULL do; wrap a REAL in
    `exact_real` and read it back with float(); a BLOB of JSON text in json(CAST(... AS TEXT)),
    read as msgspec.Raw through a `decoder` of that row type (the default gives lists). The rows
    come in no promised order.

    An SQLite built without its JSON functions (before 3.38 they were optional) gets the same
    rows read one by one, as lists; with a `decoder` of its own, sqlite3.OperationalError (as a
    `json(...)` column would raise there), so the caller reads its rows as it did before."""
    if not _HAS_JSON:
        if decoder is not _ROWS:
            raise sqlite3.OperationalError("this SQLite has no JSON functions")
        return [list(row) for row in db.execute(f"SELECT {columns} FROM ({query})", params)]
    (text,) = db.execute(f"SELECT json_group_array(json_array({columns})) FROM ({query})", params).fetchone()
    return decoder.decode(text)
