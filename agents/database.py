"""A read-only handle on the user's SQLite database, checked when it is opened.

A file is opened with ``mode=ro``; an upload is copied into memory with ``deserialize`` (no
temporary file, the user's bytes are never written back). Either way the connection carries the
guards of :mod:`agents.safe_sql`, so nothing that runs through it can change the data. Every way
a file can be unusable (missing, a folder, not SQLite, encrypted, cut off, damaged, empty, too
big) ends in a :class:`DatabaseError` whose message says which, never a traceback.

One connection is shared by Streamlit's threads, so every use of it holds the handle's lock.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path
from urllib.parse import quote

from .safe_sql import Deadline, ExecResult, execute_readonly, install_guards
from .schema import Schema, introspect, quote_identifier

SQLITE_HEADER = b"SQLite format 3\x00"
MAX_UPLOAD_BYTES = 200 * 1024 * 1024
QUICK_CHECK_SECONDS = 1.5  # integrity check at open; a larger file is checked as far as time allows
_SQLITE_SUFFIXES = {".sqlite", ".sqlite3", ".db", ".db3", ".s3db", ".sl3"}


class DatabaseError(Exception):
    """The database cannot be used; the message says why in words meant for the user."""


def _display_name(name: str) -> str:
    path = Path(name)
    return path.stem if path.suffix.lower() in _SQLITE_SUFFIXES else path.name


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MiB"


def _check_header(head: bytes, size: int, label: str) -> None:
    """Reject what is visibly not a whole SQLite file, from its first 100 bytes and its size."""
    if size == 0:
        raise DatabaseError(f"{label}: the file is empty (0 bytes), not a SQLite database")
    if not head.startswith(SQLITE_HEADER):
        if len(head) < len(SQLITE_HEADER) and SQLITE_HEADER.startswith(head):
            raise DatabaseError(f"{label}: the database file is damaged (only {size} bytes long)")
        raise DatabaseError(
            f"{label}: not a SQLite database (it may be encrypted or another format)")
    if size < 100:
        raise DatabaseError(f"{label}: the database file is damaged (only {size} bytes long)")
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    if page_size < 512 or page_size & (page_size - 1):
        raise DatabaseError(f"{label}: the database file is damaged (invalid page size in header)")
    pages = int.from_bytes(head[28:32], "big")
    header_size_valid = head[24:28] == head[92:96]  # SQLite's rule for trusting the page count
    expected = pages * page_size if header_size_valid and pages else page_size
    if size < expected:
        raise DatabaseError(
            f"{label}: the database file is damaged (it has {size:,} of {expected:,} bytes: "
            "it was probably cut off)")


def _verify(conn: sqlite3.Connection, label: str) -> None:
    """Read the catalogue and run a time-boxed integrity check; raise on damage or no tables."""
    try:
        objects = conn.execute(
            "SELECT count(*) FROM sqlite_master WHERE type IN ('table', 'view') "
            "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'").fetchone()[0]
    except sqlite3.DatabaseError as exc:
        raise DatabaseError(f"{label}: the database file is damaged ({exc})") from None
    if not objects:
        raise DatabaseError(f"{label}: the database has no tables")
    deadline = Deadline(conn, QUICK_CHECK_SECONDS)
    try:
        with deadline:
            problems = [row[0] for row in conn.execute("PRAGMA quick_check(5)").fetchall()]
    except sqlite3.DatabaseError as exc:
        if deadline.expired:
            return  # large file: the part checked in time was sound
        raise DatabaseError(f"{label}: the database file is damaged ({exc})") from None
    if problems != ["ok"]:
        lines = [line for p in problems for line in str(p).splitlines()
                 if line.strip() and not line.startswith("***")]
        detail = "; ".join(lines)
        detail = detail if len(detail) <= 300 else detail[:300] + "…"
        raise DatabaseError(f"{label}: the database file is damaged ({detail})")


class Database:
    """A read-only SQLite database: cached schema, guarded execution, table previews.

    Build one with :func:`open_database` or :meth:`Database.from_bytes`.
    """

    def __init__(self, conn: sqlite3.Connection, *, name: str, path: str | None,
                 size_bytes: int):
        self._conn = conn
        self._lock = threading.RLock()
        self._schema: Schema | None = None
        self.name = name
        self.path = path
        self.size_bytes = size_bytes

    @classmethod
    def from_bytes(cls, name: str, data: bytes, max_bytes: int = MAX_UPLOAD_BYTES) -> "Database":
        """Open an uploaded database from its bytes, in memory; ``data`` itself is not changed."""
        label = Path(name).name or "upload"
        size = len(data)
        if size > max_bytes:
            raise DatabaseError(f"{label}: the file is too large ({_mib(size)}; "
                                f"the limit is {_mib(max_bytes)})")
        head = bytes(data[:100])
        _check_header(head, size, label)
        if head[18:20] == b"\x02\x02":
            # WAL mode cannot work in memory; the copy is marked as a rollback-journal database
            data = bytes(data[:18]) + b"\x01\x01" + bytes(data[20:])
        conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        try:
            conn.deserialize(data)  # SQLite copies the bytes into its own memory
        except sqlite3.Error as exc:
            conn.close()
            raise DatabaseError(f"{label}: the database file is damaged ({exc})") from None
        _guard_and_verify(conn, label)
        return cls(conn, name=_display_name(name), path=None, size_bytes=size)

    # -- schema ----------------------------------------------------------------------------------
    @property
    def schema(self) -> Schema:
        """The database's schema, read on first use and then kept."""
        with self._lock:
            if self._schema is None:
                self._schema = introspect(self._conn, self.name)
            return self._schema

    # -- queries ---------------------------------------------------------------------------------
    def execute(self, sql: str, *, timeout: float = 10.0, max_rows: int = 1000) -> ExecResult:
        """Run one read-only query; bad, unsafe or slow SQL comes back as ``ok=False``."""
        return execute_readonly(self._conn, sql, timeout=timeout, max_rows=max_rows,
                                lock=self._lock)

    def table_preview(self, table: str, limit: int = 20) -> ExecResult:
        """The first ``limit`` rows of ``table``; ``truncated`` says whether it has more."""
        limit = max(0, int(limit))
        return self.execute(f"SELECT * FROM {quote_identifier(table)} LIMIT {limit + 1}",
                            max_rows=limit)

    # -- lifetime --------------------------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> "Database":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __repr__(self) -> str:
        where = self.path or "in memory"
        return f"Database({self.name!r}, {where}, {self.size_bytes:,} bytes)"


def _read_only_uri(path: str) -> str:
    """A ``file:`` URI for ``path`` with ``mode=ro``; '?', '#', '%' and spaces are escaped."""
    return "file:" + quote(os.path.abspath(path)) + "?mode=ro"


def open_database(path: str | os.PathLike, *, name: str | None = None) -> Database:
    """Open the SQLite file at ``path`` read-only and check that it is usable."""
    path = os.fspath(path)
    label = os.path.basename(path) or path
    if not os.path.exists(path):
        raise DatabaseError(f"{path}: no such file")
    if os.path.isdir(path):
        raise DatabaseError(f"{path} is a folder, not a SQLite database file")
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as handle:
            head = handle.read(100)
    except OSError as exc:
        raise DatabaseError(f"{label}: cannot read the file ({exc.strerror or exc})") from None
    _check_header(head, size, label)
    try:
        conn = sqlite3.connect(_read_only_uri(path), uri=True, check_same_thread=False,
                               isolation_level=None)
    except sqlite3.Error as exc:
        raise DatabaseError(f"{label}: cannot open the database ({exc})") from None
    _guard_and_verify(conn, label)
    return Database(conn, name=name or _display_name(path), path=os.path.abspath(path),
                    size_bytes=size)


def _guard_and_verify(conn: sqlite3.Connection, label: str) -> None:
    """Install the read-only guards, then check the database can be read; on failure close the
    connection and raise one clear :class:`DatabaseError`."""
    try:
        install_guards(conn)
        _verify(conn, label)
    except DatabaseError:
        conn.close()
        raise
    except sqlite3.Error as exc:
        conn.close()
        raise DatabaseError(f"{label}: the database file is damaged ({exc})") from None
