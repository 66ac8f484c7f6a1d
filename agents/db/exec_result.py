"""The outcome of one query, the budget that keeps it small, and the words for its failures.

A row cap alone does not bound memory: a thousand rows of one megabyte each are a gigabyte in the
preview, the session state, the run store and the browser. So rows are fetched in batches while
their bytes are counted: a cell longer than the cell limit is cut (and counted in ``cells_cut``),
and fetching stops when the next row would pass the byte budget. Either way the result says so,
as it says when the row cap was reached: ``truncated`` is true and ``truncated_reason`` is
``"rows"`` or ``"bytes"``.
"""

from __future__ import annotations

import math
import sqlite3
from dataclasses import dataclass, field, fields
from typing import Any

MAX_RESULT_BYTES = 8 * 1024 * 1024  # all cells of one result together
MAX_CELL_BYTES = 64 * 1024          # one text or blob cell; longer ones are cut
CUT_MARK = "…"                      # appended to a text cell that was cut
NUMBER_BYTES = 8                    # what a number or NULL counts for
FETCH_BATCH = 256
MAX_MESSAGE_CHARS = 300             # an error message longer than this is cut


def _json_cell(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"<blob {len(value)} bytes>"
    return str(value)


def text_bytes(text: str) -> int:
    """The UTF-8 size of ``text`` (cheap for ASCII, the common case)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _bounded_cell(value: Any, cell_bytes: int) -> tuple[Any, int, bool]:
    """(the value, cut to ``cell_bytes`` if longer; its size; whether it was cut)."""
    if isinstance(value, str):
        size = text_bytes(value)
        if size <= cell_bytes:
            return value, size, False
        kept = value.encode("utf-8", "surrogatepass")[:cell_bytes].decode("utf-8", "ignore")
        return kept + CUT_MARK, cell_bytes, True
    if isinstance(value, (bytes, bytearray, memoryview)):
        size = len(value)
        if size <= cell_bytes:
            return bytes(value), size, False
        return bytes(value[:cell_bytes]), cell_bytes, True
    return value, NUMBER_BYTES, False


def timeout_message(seconds: float) -> str:
    return f"the query ran longer than {seconds:g} s and was stopped"


def describe_error(exc: BaseException,
                   conn: sqlite3.Connection | None = None) -> tuple[str, str]:
    """(one-line message, error class) for a failure of the user's SQL.

    SQLite's own words are kept where they help a model repair the query; the few that do not
    say what happened (a refusal by the authorizer, a size or memory limit) are put plainly.
    """
    text = " ".join(str(exc).split()) or exc.__class__.__name__
    if len(text) > MAX_MESSAGE_CHARS:  # SQLite quotes the token it stopped at, however long
        text = text[:MAX_MESSAGE_CHARS] + "…"
    if text.startswith("not authorized"):
        return ("refused by the read-only guard: a query may only read tables and views "
                f"(SQLite: {text})", "UnsafeSQL")
    if text == "string or blob too big":
        limit = conn.getlimit(sqlite3.SQLITE_LIMIT_LENGTH) if conn is not None else 0
        size = f" ({limit / (1024 * 1024):g} MiB)" if limit else ""
        return (f"a value the query builds is longer than the limit for one string or "
                f"blob{size}", "SizeLimit")
    if isinstance(exc, UnicodeError):
        return f"the query text is not valid Unicode ({text})", "UnicodeError"
    if isinstance(exc, MemoryError) or text == "out of memory":
        return "the query needed more memory than a query may use and was stopped", "MemoryLimit"
    return text, exc.__class__.__name__


@dataclass
class Collected:
    """Rows fetched within the limits, and which limit stopped the fetch (if any)."""

    rows: list[tuple] = field(default_factory=list)
    byte_count: int = 0
    cells_cut: int = 0
    truncated_reason: str | None = None


def collect_rows(cursor: sqlite3.Cursor, *, max_rows: int, max_bytes: int,
                 max_cell_bytes: int) -> Collected:
    """Fetch at most ``max_rows`` rows and ``max_bytes`` bytes from ``cursor``, in batches."""
    out = Collected()
    max_rows, max_bytes = max(0, int(max_rows)), max(0, int(max_bytes))
    cell_bytes = max(1, min(int(max_cell_bytes), max_bytes or 1))
    while out.truncated_reason is None:
        batch = cursor.fetchmany(min(FETCH_BATCH, max_rows + 1 - len(out.rows)))
        if not batch:
            break
        for row in batch:
            if len(out.rows) == max_rows:
                out.truncated_reason = "rows"
                break
            cells = [_bounded_cell(value, cell_bytes) for value in row]
            size = sum(c[1] for c in cells)
            if out.byte_count + size > max_bytes:
                out.truncated_reason = "bytes"
                break
            out.rows.append(tuple(c[0] for c in cells))
            out.byte_count += size
            out.cells_cut += sum(1 for c in cells if c[2])
    return out


def limit_note(preview: dict | None) -> str | None:
    """Which limit shortened a result, from its preview dict (None when none did)."""
    if not preview:
        return None
    notes = []
    count = preview.get("row_count") or 0
    if preview.get("truncated_reason") == "bytes":
        notes.append(f"stopped after {count:,} row(s): the result reached its size budget "
                     f"({MAX_RESULT_BYTES // (1024 * 1024)} MiB by default)")
    elif preview.get("truncated"):
        notes.append(f"stopped at the row cap ({count:,} rows)")
    if preview.get("cells_cut"):
        notes.append(f"{preview['cells_cut']:,} long value(s) cut to "
                     f"{MAX_CELL_BYTES // 1024} KiB each")
    return "; ".join(notes) or None


@dataclass
class ExecResult:
    """The outcome of one query: rows (within the caps) or the error, never an exception."""

    ok: bool
    sql: str
    columns: list[str] = field(default_factory=list)
    rows: list[tuple] = field(default_factory=list)
    row_count: int = 0
    truncated: bool = False
    seconds: float = 0.0
    error: str | None = None
    error_class: str | None = None  # "UnsafeSQL", "Timeout", "OperationalError", ...
    hint: str | None = None  # for a name error or a missing function (agents.rules.error_hints)
    truncated_reason: str | None = None  # "rows" (the row cap) or "bytes" (the byte budget)
    cells_cut: int = 0  # cells shortened to the cell limit
    byte_count: int = 0  # bytes of all cells kept, as the budget counts them

    def feedback(self) -> str:
        """The error as a repair agent should read it: SQLite's message, then the hint."""
        text = self.error or self.error_class or "unknown error"
        return f"{text}\nHint: {self.hint}" if self.hint else text

    def limit_note(self) -> str | None:
        """A short sentence saying which limit shortened the result, or None."""
        return limit_note(self.preview(rows=0))

    def preview(self, rows: int = 20) -> dict:
        """JSON-safe summary with the first ``rows`` rows (blobs become '<blob N bytes>')."""
        return {
            "ok": self.ok,
            "sql": self.sql,
            "columns": list(self.columns),
            "rows": [[_json_cell(v) for v in row] for row in self.rows[:max(0, rows)]],
            "row_count": self.row_count,
            "truncated": self.truncated,
            "truncated_reason": self.truncated_reason,
            "cells_cut": self.cells_cut,
            "seconds": round(self.seconds, 4),
            "error": self.error,
            "error_class": self.error_class,
            "hint": self.hint,
        }

    def to_dict(self) -> dict:
        """Every field as plain data (what a query worker sends back)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: dict) -> "ExecResult":
        names = {f.name for f in fields(cls)}
        result = cls(**{k: v for k, v in data.items() if k in names})
        result.rows = [tuple(r) for r in result.rows]
        result.columns = list(result.columns)
        return result

    def to_dataframe(self):
        """The rows as a pandas DataFrame (empty, with the columns, when there are none)."""
        import pandas as pd

        return pd.DataFrame.from_records([tuple(r) for r in self.rows], columns=list(self.columns))
