"""tap.sqlite.rows_at_once: many rows read in one step give what reading them row by row gives."""

from __future__ import annotations

import random
import sqlite3
import struct
from pathlib import Path

import msgspec
import pytest

from store.lexical import LexicalIndex
from tap import sqlite as sqlite_module
from tap.records import Memory
from tap.sqlite import connect, exact_real, rows_at_once


@pytest.fixture
def db(tmp_path: Path) -> sqlite3.Connection:
    db = connect(tmp_path / "rows.db")
    db.execute("CREATE TABLE t (n INTEGER, word TEXT, score REAL, missing TEXT)")
    return db


def test_rows_match_a_row_by_row_read_with_every_double_exact(db: sqlite3.Connection) -> None:
    rng = random.Random(7)
    doubles = [-rng.random() * rng.choice([1e-9, 1.0, 37.0, 1e6]) for _ in range(500)]  # bm25 scores
    doubles += [rng.random() * 10.0**exponent for exponent in range(-307, 309)]
    doubles += [0.0, -0.0, 1 / 3, 2**-1074, 1.7976931348623157e308, struct.unpack("d", struct.pack("Q", 1))[0]]
    words = ["Zürich", 'a "quoted" word', "tab\tnew\nline", "🎨", "back\\slash", ""]
    db.executemany(
        "INSERT INTO t VALUES (?, ?, ?, NULL)", [(n, words[n % len(words)], x) for n, x in enumerate(doubles)]
    )
    expected = sorted(db.execute("SELECT n, word, score, missing FROM t").fetchall())
    got = rows_at_once(db, f"n, word, {exact_real('score')}, missing", "SELECT n, word, score, missing FROM t")
    assert sorted((n, word, float(score), missing) for n, word, score, missing in got) == expected
    # the 15 digits SQLite itself prints would not do: this is why exact_real exists
    printed = [float(text) for (text,) in db.execute("SELECT CAST(score AS TEXT) FROM t ORDER BY n")]
    assert printed != doubles


def test_no_rows_and_parameters(db: sqlite3.Connection) -> None:
    db.executemany("INSERT INTO t (n, word) VALUES (?, ?)", [(1, "one"), (2, "two"), (3, "three")])
    assert rows_at_once(db, "n", "SELECT n FROM t WHERE n > ?", (9,)) == []
    assert sorted(rows_at_once(db, "n, word", "SELECT n, word FROM t WHERE n IN (?, ?)", (1, 3))) == [
        [1, "one"],
        [3, "three"],
    ]


def test_json_records_come_back_byte_for_byte(tmp_path: Path) -> None:
    """The lexical index reads records in one step (json() of each, kept raw): what tap wrote is
    what it reads, and a record that is not JSON still reads, row by row."""
    index = LexicalIndex(tmp_path / "lexical.db")
    try:
        memory = Memory(
            id="m1",
            content='The user\'s "favourite" café is in Zürich 🎨\nsecond line \\ back',
            scope="s",
            created_at=1_764_300_000.123456789,
            valid_from=2.5e-7,
        )
        record = msgspec.json.encode(memory)
        index.upsert([("m1", "s", memory.content, record, None), ("m2", "s", "plain note", b"not json", None)])
        assert index.records(["m1"]) == {"m1": record}
        compact = b'{"a":[1,2.5e-7,"x\\u00e9\\n"],"b":{"c":null}}'
        index.upsert([("m3", "s", "third", compact, None)])
        assert index.records(["m3"]) == {"m3": compact}
        assert index.records(["m3", "m2"]) == {"m3": compact, "m2": b"not json"}  # that batch row by row
    finally:
        index.close()


def test_an_sqlite_without_json_functions_reads_the_same_rows_one_by_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Searches and records give the same answers when SQLite lacks json_group_array."""
    index = LexicalIndex(tmp_path / "lexical.db")
    try:
        rows = [(f"m{n}", f"s{n % 3}", f"note {n} about the cello and tea", b'{"n":%d}' % n, None) for n in range(40)]
        index.upsert(rows)
        queries = ["cello tea", "note about", "tea"]

        def answers() -> list[object]:
            index._records.clear()
            found = [index.search(q, scope=f"s{n}", k=5) for q in queries for n in range(3)]
            return [
                *found,
                index.records([f"m{n}" for n in range(0, 40, 3)]),
                sorted(index.in_scope(["m1", "m4", "m2"], "s1")),
            ]

        with_json = answers()
        monkeypatch.setattr(sqlite_module, "_HAS_JSON", False)
        assert answers() == with_json
        assert with_json[-1] == ["m1", "m4"] and all(with_json[:-2])
    finally:
        index.close()
