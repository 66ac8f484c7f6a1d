"""Reading what a database contains, with bounded work.

Introspection comes in two parts so that each can be bounded on its own:

- :func:`read_structure` reads the catalogue: tables, views, columns, keys. It runs no query on
  the data, so it is quick whatever the size of the tables.
- :func:`table_examples` and :func:`table_count` read a few example values and the row count of
  one table. A heavy view can make either of them slow, so :func:`fill_details` hands each a
  share of one time budget. The functions that run a step are passed in: here, on a local
  connection; in :class:`agents.db.database.Database`, in a worker process that is killed when a
  step outlives its share (SQLite cannot interrupt one long step, such as a LIKE over megabytes
  computed by a view).
"""

from __future__ import annotations

import math
import sqlite3
import time
from typing import Any, Callable

from agents.db.safe_sql import Deadline
from agents.db.identifiers import quote_identifier
from agents.db.schema import BLOB_EXAMPLE, Column, ForeignKey, Schema, Table

EXAMPLES_PER_COLUMN = 3
EXAMPLE_SAMPLE_ROWS = 1000     # example values come from this many leading rows of a table
EXAMPLE_MAX_CHARS = 40         # longer text examples are cut to this length
INTROSPECTION_BUDGET = 6.0     # seconds for all row counts and example queries together
QUERY_BUDGET = 1.5             # seconds for any single count or example query
ROWID_SECONDS = 0.5            # for max(rowid), the estimate when counting ran out of time

ExamplesStep = Callable[[Table, float], "list[list] | None"]
CountStep = Callable[[Table, float], "tuple[int, bool]"]


# -- structure --------------------------------------------------------------------------------

def _shadow_tables(conn: sqlite3.Connection) -> set[str]:
    """Tables a virtual table keeps its data in (full-text indexes): internal, not for queries."""
    try:
        rows = conn.execute("PRAGMA table_list").fetchall()
    except sqlite3.Error:
        return set()
    return {row[1] for row in rows if row[0] == "main" and row[2] == "shadow"}


def _user_objects(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """(type, name) of every table and view in creation order; SQLite's own tables left out."""
    rows = conn.execute(
        "SELECT type, name FROM sqlite_master WHERE type IN ('table', 'view') "
        "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'").fetchall()
    shadow = _shadow_tables(conn)
    return [(kind, name) for kind, name in rows if name not in shadow]


def _read_table(conn: sqlite3.Connection, name: str, is_view: bool) -> Table | str:
    """The table's columns and key, or why it cannot be read."""
    try:
        info = conn.execute(f"PRAGMA table_info({quote_identifier(name)})").fetchall()
    except sqlite3.Error as exc:  # a virtual table whose module is missing, a broken view
        return " ".join(str(exc).split()) or exc.__class__.__name__
    if not info:
        return "it has no columns"
    columns = [Column(name=row[1], type=row[2] or "", not_null=bool(row[3]), primary_key=row[5] > 0)
               for row in info]
    primary_key = [row[1] for row in sorted((r for r in info if r[5] > 0), key=lambda r: r[5])]
    return Table(name=name, columns=columns, primary_key=primary_key, is_view=is_view)


def _read_foreign_keys(conn: sqlite3.Connection, tables: list[Table]) -> list[ForeignKey]:
    by_name = {t.name.casefold(): t for t in tables}
    found: list[ForeignKey] = []
    for table in tables:
        if table.is_view:
            continue
        try:
            rows = conn.execute(
                f"PRAGMA foreign_key_list({quote_identifier(table.name)})").fetchall()
        except sqlite3.Error:
            continue
        groups: dict[int, list[tuple]] = {}
        for row in rows:
            groups.setdefault(row[0], []).append(row)
        for _, pairs in sorted(groups.items(), reverse=True):  # SQLite numbers the last one 0
            pairs.sort(key=lambda r: r[1])
            parent = by_name.get(str(pairs[0][2]).casefold())
            if parent is None:
                continue  # refers to a table that is not in the database
            for position, (_id, _seq, _parent, child_col, parent_col, *_rest) in enumerate(pairs):
                if parent_col is None:  # no column named: the parent's primary key
                    if position >= len(parent.primary_key):
                        continue
                    parent_col = parent.primary_key[position]
                child = table.column(child_col)
                referenced = parent.column(parent_col)
                if child is None or referenced is None:
                    continue
                fk = ForeignKey(table.name, child.name, parent.name, referenced.name)
                if fk not in found:
                    found.append(fk)
    return found


def read_structure(conn: sqlite3.Connection
                   ) -> tuple[list[Table], list[ForeignKey], list[tuple[str, str]]]:
    """(readable tables and views, their foreign keys, (name, reason) of those unreadable)."""
    tables: list[Table] = []
    unreadable: list[tuple[str, str]] = []
    for kind, name in _user_objects(conn):
        table = _read_table(conn, name, is_view=(kind == "view"))
        if isinstance(table, Table):
            tables.append(table)
        else:
            unreadable.append((name, table))
    return tables, _read_foreign_keys(conn, tables), unreadable


# -- examples and counts ----------------------------------------------------------------------

def _example_expression(column: str) -> str:
    """Bounded per-cell work: text cut short, blobs replaced by an empty blob marker."""
    col = quote_identifier(column)
    return (f"CASE typeof({col}) WHEN 'blob' THEN x'' "
            f"WHEN 'text' THEN substr({col}, 1, {EXAMPLE_MAX_CHARS + 1}) ELSE {col} END")


def _example_value(value: Any) -> Any:
    if isinstance(value, bytes):
        return BLOB_EXAMPLE
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, str):
        value = " ".join(value.split())
        if len(value) > EXAMPLE_MAX_CHARS:
            value = value[:EXAMPLE_MAX_CHARS] + "…"
    return value


def table_examples(conn: sqlite3.Connection, table: Table, seconds: float) -> list[list] | None:
    """A few distinct non-NULL values per column, from the table's first rows only; None when
    the table cannot be read in ``seconds``."""
    if seconds <= 0 or not table.columns:
        return None
    projection = ", ".join(_example_expression(c.name) for c in table.columns)
    sql = f"SELECT {projection} FROM {quote_identifier(table.name)} LIMIT {EXAMPLE_SAMPLE_ROWS}"
    try:
        with Deadline(conn, seconds):
            rows = conn.execute(sql).fetchall()
    except sqlite3.Error:  # too slow (a heavy view) or unreadable
        return None
    examples = []
    for index in range(len(table.columns)):
        seen: list = []
        for row in rows:
            if row[index] is None:
                continue
            value = _example_value(row[index])
            if value not in seen:
                seen.append(value)
                if len(seen) == EXAMPLES_PER_COLUMN:
                    break
        examples.append(seen)
    return examples


def table_count(conn: sqlite3.Connection, table: Table, seconds: float) -> tuple[int, bool]:
    """(row count, estimated): exact when counting fits in ``seconds``, else ``max(rowid)``
    (-1 when even that is unknown: a view, a WITHOUT ROWID table). A table found to hold no
    row at all (one page read) is 0, exact, whatever the time left for counting."""
    name = quote_identifier(table.name)
    if seconds > 0:
        try:
            with Deadline(conn, seconds):
                return int(conn.execute(f"SELECT COUNT(*) FROM {name}").fetchone()[0]), False
        except sqlite3.Error:
            pass
    if table.is_view:
        return -1, True
    try:  # an empty table is known at its first page, with or without a rowid
        with Deadline(conn, ROWID_SECONDS):
            if not conn.execute(f"SELECT EXISTS (SELECT 1 FROM {name})").fetchone()[0]:
                return 0, False
    except sqlite3.Error:
        pass
    try:  # the largest rowid: a few page reads, and the count itself unless rows were deleted
        with Deadline(conn, ROWID_SECONDS):
            top = conn.execute(f"SELECT max(rowid) FROM {name}").fetchone()[0]
        return int(top or 0), True
    except (sqlite3.Error, TypeError, ValueError):  # no rowid, or a column named rowid
        return -1, True


class _Budget:
    """Seconds left for the whole introspection, handed out per query; ``overhead`` is what a
    step may take beyond its share (a worker's kill grace), kept back so the total holds."""

    def __init__(self, seconds: float, overhead: float):
        self.end = time.monotonic() + seconds
        self.overhead = overhead

    def next_query(self) -> float:
        return max(0.0, min(QUERY_BUDGET, self.end - time.monotonic() - self.overhead))


def fill_details(tables: list[Table], examples: ExamplesStep, count: CountStep,
                 budget_seconds: float | None = None, step_overhead: float = 0.0) -> None:
    """Set example values and row counts on ``tables``, all within ``budget_seconds``
    (default :data:`INTROSPECTION_BUDGET`). Examples come first: they matter more to the
    prompts than exact counts.
    """
    seconds = INTROSPECTION_BUDGET if budget_seconds is None else budget_seconds
    budget = _Budget(seconds, step_overhead)
    for table in tables:
        seconds = budget.next_query()
        found = examples(table, seconds) if seconds > 0 and table.columns else None
        for column, values in zip(table.columns, found or []):
            column.examples = list(values)
    for table in tables:
        table.row_count, table.row_count_estimated = count(table, budget.next_query())


def introspect(conn: sqlite3.Connection, db_name: str, *,
               budget_seconds: float | None = None) -> Schema:
    """Read the schema of the database open on ``conn``, in this process.

    Column and key information is exact. Example values come from the first rows of each table
    and row counts are exact unless counting takes too long, when they fall back to
    ``max(rowid)`` (``row_count_estimated``); both share a time budget.
    """
    tables, foreign_keys, _ = read_structure(conn)
    fill_details(tables, lambda t, s: table_examples(conn, t, s),
                 lambda t, s: table_count(conn, t, s), budget_seconds)
    return Schema(db_name=db_name, tables=tables, foreign_keys=foreign_keys)
