"""Looking for a text anywhere in one of tap's SQLite files (what was stored, whatever the table)."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def stored_anywhere(database: Path, needle: bytes) -> list[str]:
    """Every table.column of a SQLite file where `needle` occurs in some row (text or blob)."""
    found = []
    with sqlite3.connect(database) as db:
        for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            columns = [row[1] for row in db.execute(f"PRAGMA table_info('{table}')")]
            for column in columns:
                for (value,) in db.execute(f'SELECT "{column}" FROM "{table}"'):
                    raw = value if isinstance(value, bytes) else str(value).encode()
                    if needle in raw:
                        found.append(f"{table}.{column}")
                        break
    return found
