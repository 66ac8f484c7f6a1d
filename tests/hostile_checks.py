"""The checks of the hostile-input runs (``test_hostile_statements.py`` and
``test_hostile_files.py``): what must hold of every execution whatever the input -- within its
time limit plus the slack, within the byte budget, no write run, every failure one clear line
of a known class -- and a folder's files listed with their hashes."""

from __future__ import annotations

from pathlib import Path

from agents.db.exec_result import CUT_MARK, MAX_CELL_BYTES, MAX_MESSAGE_CHARS, MAX_RESULT_BYTES
from dbfactory import sha256

LIMIT = 0.5           # seconds per statement in this run
SLACK = 1.0           # allowed past any limit
ERROR_CLASSES = {"UnsafeSQL", "Timeout", "OperationalError", "DataError", "ProgrammingError",
                 "IntegrityError", "DatabaseError", "SizeLimit", "MemoryLimit", "WorkerEnded",
                 "UnicodeError"}


# -- checks -----------------------------------------------------------------------------------

def clear_message(message: str | None) -> bool:
    """One line, not empty, not a traceback, not a wall of text."""
    return (isinstance(message, str) and bool(message.strip()) and "\n" not in message
            and "Traceback" not in message and 'File "' not in message
            and len(message) <= MAX_MESSAGE_CHARS + 200)


def cells_bytes(rows: list[tuple]) -> int:
    total = 0
    for row in rows:
        for value in row:
            if isinstance(value, str):
                total += len(value.removesuffix(CUT_MARK).encode("utf-8", "surrogatepass"))
            elif isinstance(value, bytes):
                total += len(value)
            else:
                total += 8
    return total


def check_result(result, sql: str, seconds: float, limit: float,
                 kind: str = "read") -> list[str]:
    """Everything wrong with one execution (an empty list when all holds)."""
    problems = []
    if seconds > limit + SLACK:
        problems.append(f"took {seconds:.2f} s")
    if result.ok:
        if cells_bytes(result.rows) > MAX_RESULT_BYTES or result.byte_count > MAX_RESULT_BYTES:
            problems.append("result over the byte budget")
        if any(isinstance(v, (str, bytes)) and len(v) > MAX_CELL_BYTES + len(CUT_MARK)
               for row in result.rows for v in row):
            problems.append("a cell over the cell limit")
        if kind == "write":
            problems.append("a write ran")
    else:
        if not clear_message(result.error):
            problems.append(f"unclear message {result.error!r:.200}")
        if result.error_class not in ERROR_CLASSES:
            problems.append(f"unexpected class {result.error_class}")
    return [f"{p}: {sql[:120]!r}" for p in problems]


def listing(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): sha256(p) for p in sorted(folder.rglob("*"))
            if p.is_file()}
