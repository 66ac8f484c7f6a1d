"""Writing a sample database file: schema, rows, checks, then an atomic move into place.

Every sample database is written the same way, so the steps live here once: the DDL is run,
the filler inserts its rows from one seeded generator inside one transaction, foreign keys are
checked, the file is vacuumed (so a rebuild gives the same bytes) and only then replaces the old
file, so readers never see half a database.
"""

from __future__ import annotations

import os
import random
import sqlite3
from pathlib import Path
from typing import Callable, Sequence

Filler = Callable[[sqlite3.Connection, random.Random], None]


def write_db(path: Path, ddl: str, fill: Filler, seed: int) -> Path:
    """Create the file next to its final place and move it over, so readers never see half a DB."""
    tmp = path.with_name(path.name + ".building")
    tmp.unlink(missing_ok=True)
    conn = sqlite3.connect(tmp)
    try:
        conn.execute("PRAGMA foreign_keys = ON")
        conn.executescript(ddl)
        with conn:
            fill(conn, random.Random(seed))
        problems = conn.execute("PRAGMA foreign_key_check").fetchall()
        if problems:
            raise RuntimeError(f"{path.name}: foreign key violations {problems[:5]}")
        conn.execute("VACUUM")
    except BaseException:
        conn.close()
        tmp.unlink(missing_ok=True)
        raise
    conn.close()
    os.replace(tmp, path)
    return path


def insert(conn: sqlite3.Connection, table: str, rows: Sequence[tuple]) -> None:
    """Insert whole rows (one value per column, in column order) into ``table``."""
    if rows:
        marks = ", ".join("?" * len(rows[0]))
        conn.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)


def insert_tables(conn: sqlite3.Connection, **rows_by_table: Sequence[tuple]) -> None:
    """Insert the rows of several tables, in the order given (parents before children, since
    foreign keys are enforced while filling)."""
    for table, rows in rows_by_table.items():
        insert(conn, table, rows)
