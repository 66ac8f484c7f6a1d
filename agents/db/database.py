"""A read-only handle on the user's SQLite database, checked when it is opened.

A file is opened with ``mode=ro`` (``immutable=1`` for a WAL-mode file, which ``mode=ro`` would
leave ``-wal`` and ``-shm`` files beside; see :mod:`agents.db.wal`); an upload is kept as bytes and
copied into each worker with ``deserialize`` (the user's bytes are never written back). Every
query, the integrity check and every introspection step run in worker processes
(:mod:`agents.db.worker_pool`) with the guards of :mod:`agents.db.safe_sql`, under a deadline that
holds even for a single long SQLite step: a worker that outlives it is killed and replaced.

Every way a file can be unusable (missing, a folder, not SQLite, encrypted, cut off, damaged,
empty, no readable table, too big) ends in a :class:`DatabaseError` whose message says which,
never a traceback; every failing query is an :class:`ExecResult` with one clear line.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
import weakref
from pathlib import Path
from urllib.parse import quote

from agents.db import introspection, wal
from agents.db.exec_result import MAX_CELL_BYTES, MAX_RESULT_BYTES, ExecResult, timeout_message
from agents.db.safe_sql import UnsafeSQLError, check_length
from agents.db.identifiers import quote_identifier
from agents.db.schema import Schema, Table
from agents.db.worker_pool import GRACE_SECONDS, PoolClosed, PoolError, WorkerPool, WorkerStopped

SQLITE_HEADER = b"SQLite format 3\x00"
MAX_UPLOAD_BYTES = 200 * 1024 * 1024
MAX_SNAPSHOT_BYTES = 2 * 1024 * 1024 * 1024  # a file read into memory with its -wal
QUICK_CHECK_SECONDS = 1.5  # integrity check at open; a larger file is checked as far as time allows
STRUCTURE_SECONDS = 10.0   # reading the catalogue (names, columns, keys) at open
_SQLITE_SUFFIXES = {".sqlite", ".sqlite3", ".db", ".db3", ".s3db", ".sl3", ".zip"}
WORKER_ENDED = ("the process running the query ended unexpectedly (it may have needed more "
                "memory than a query may use); the database is ready for the next query")


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


def _short(text: str, limit: int = 300) -> str:
    """``text`` on one line and at most ``limit`` characters (names and details can be huge)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


def _damaged(label: str, detail: str) -> DatabaseError:
    return DatabaseError(f"{label}: the database file is damaged ({_short(detail)})")


def _open_step(pool: WorkerPool, label: str, request: dict, seconds: float) -> dict | None:
    """One request made while opening: its reply, or None when the worker was stopped at the
    deadline; a worker that cannot start or a failed request raises :class:`DatabaseError`."""
    try:
        reply = pool.call(request, seconds=seconds)
    except WorkerStopped:
        return None
    except PoolError as exc:
        raise DatabaseError(f"{label}: cannot open the database ({exc})") from None
    if not reply.get("ok"):
        raise _damaged(label, str(reply.get("error")))
    return reply


def _verify(pool: WorkerPool, label: str) -> None:
    """Read the catalogue and run a time-boxed integrity check; raise on damage."""
    reply = _open_step(pool, label, {"op": "verify", "seconds": QUICK_CHECK_SECONDS},
                       QUICK_CHECK_SECONDS)
    if reply is None:
        return  # stopped inside one long check step: the part checked in time was sound
    if reply.get("damage"):
        raise _damaged(label, reply["damage"])
    problems = reply.get("problems")
    if problems is not None and problems != ["ok"]:
        lines = [line for p in problems for line in str(p).splitlines()
                 if line.strip() and not line.startswith("***")]
        raise _damaged(label, "; ".join(lines))


def _read_structure(pool: WorkerPool, label: str, db_name: str, wal_mode: bool) -> Schema:
    """Tables, views, columns and keys; raise when there is no table a query could read."""
    reply = _open_step(pool, label, {"op": "structure"}, STRUCTURE_SECONDS)
    if reply is None:
        raise DatabaseError(f"{label}: reading its list of tables took longer than "
                            f"{STRUCTURE_SECONDS:g} s, so it cannot be used")
    schema = Schema.from_dict(reply["schema"])
    schema.db_name = db_name
    unreadable = reply.get("unreadable") or []
    if schema.tables:
        return schema
    if unreadable:
        name, reason = (_short(str(part)) for part in unreadable[0])
        raise DatabaseError(f"{label}: none of its {len(unreadable)} tables and views can be read "
                            f"(for example {name!r}: {reason})")
    if wal_mode:
        raise DatabaseError(
            f"{label}: the database has no tables in its main file; it is in WAL mode, so its "
            "data is probably still in its -wal file. Upload a .zip holding both files, or "
            f"checkpoint it first (sqlite3 {label} 'PRAGMA wal_checkpoint(TRUNCATE)')")
    raise DatabaseError(f"{label}: the database has no tables")


class Database:
    """A read-only SQLite database: cached schema, guarded execution, table previews.

    Build one with :func:`open_database` or :meth:`Database.from_bytes`. ``notice`` is a
    sentence the user should read about what was opened (None when there is nothing to say).
    """

    def __init__(self, pool: WorkerPool, schema: Schema, *, name: str, path: str | None,
                 size_bytes: int, notice: str | None = None):
        self._pool = pool
        self._schema = schema
        self._details_read = False
        self._schema_lock = threading.Lock()
        self._finalizer = weakref.finalize(self, pool.close)
        self.name = name
        self.path = path
        self.size_bytes = size_bytes
        self.notice = notice

    @classmethod
    def _open(cls, label: str, *, name: str, path: str | None, size: int,
              uri: str | None = None, data: bytes | None = None, wal_mode: bool = False,
              notice: str | None = None) -> "Database":
        pool = WorkerPool(uri=uri, data=data)
        try:
            _verify(pool, label)
            schema = _read_structure(pool, label, name, wal_mode)
        except BaseException:
            pool.close()
            raise
        return cls(pool, schema, name=name, path=path, size_bytes=size, notice=notice)

    @classmethod
    def from_bytes(cls, name: str, data: bytes, max_bytes: int = MAX_UPLOAD_BYTES) -> "Database":
        """Open an uploaded database from its bytes, in memory; ``data`` itself is not changed.

        A ``.zip`` holding one database and its ``-wal`` file is opened with the ``-wal``
        merged in (see :mod:`agents.db.wal`).
        """
        label = _short(Path(name).name, 120) or "upload"
        size = len(data)
        if size > max_bytes:
            raise DatabaseError(f"{label}: the file is too large ({_mib(size)}; "
                                f"the limit is {_mib(max_bytes)})")
        wal_data = None
        if wal.is_zip(data):
            try:
                inner, data, wal_data = wal.read_zip(data, max_bytes)
            except wal.WalError as exc:
                raise DatabaseError(f"{label}: {exc}") from None
            label, size = f"{label}/{inner}", len(data)
        head = bytes(data[:100])
        _check_header(head, size, label)
        wal_mode, notice = wal.is_wal_mode(head), None
        if wal_data:
            try:
                data = wal.merge(data, wal_data)
            except wal.WalError as exc:
                raise DatabaseError(f"{label}: {exc}") from None
            size = len(data)
        elif wal_mode:
            notice = (f"{Path(label).name} is a WAL-mode database: changes still in its -wal "
                      "file, if it had one, are not included. To include them, upload a .zip "
                      "holding both files.")
        if wal.is_wal_mode(bytes(data[:100])):
            data = wal.as_rollback_mode(data)  # WAL cannot work in memory
        return cls._open(label, name=_display_name(name), path=None, size=size,
                         data=bytes(data), wal_mode=wal_mode and not wal_data, notice=notice)

    # -- schema ----------------------------------------------------------------------------------
    @property
    def schema(self) -> Schema:
        """The database's schema; example values and row counts are read on first use, within
        :data:`agents.db.introspection.INTROSPECTION_BUDGET` seconds however the data looks."""
        with self._schema_lock:
            if not self._details_read:
                introspection.fill_details(self._schema.tables, self._examples, self._count,
                                           step_overhead=GRACE_SECONDS)
                self._details_read = True
            return self._schema

    def _ask(self, request: dict, seconds: float) -> dict | None:
        try:
            reply = self._pool.call(request, seconds=seconds)
        except (WorkerStopped, PoolError):
            return None
        return reply if reply.get("ok") else None

    def _examples(self, table: Table, seconds: float) -> list[list] | None:
        reply = self._ask({"op": "examples", "table": dataclasses.asdict(table),
                           "seconds": seconds}, seconds)
        return reply["examples"] if reply else None

    def _count(self, table: Table, seconds: float) -> tuple[int, bool]:
        fallback = 0.0 if table.is_view else introspection.ROWID_SECONDS  # max(rowid)
        reply = self._ask({"op": "count", "table": dataclasses.asdict(table),
                           "seconds": seconds}, seconds + fallback)
        return (reply["count"], reply["estimated"]) if reply else (-1, True)

    # -- queries ---------------------------------------------------------------------------------
    def execute(self, sql: str, *, timeout: float = 10.0, max_rows: int = 1000,
                max_bytes: int = MAX_RESULT_BYTES,
                max_cell_bytes: int = MAX_CELL_BYTES) -> ExecResult:
        """Run one read-only query; bad, unsafe, slow or oversized SQL comes back as ``ok=False``.

        ``timeout`` covers checking the SQL, running it and fetching its rows; a worker still
        busy shortly after it is killed, so the call returns within the limit plus a fraction
        of a second. At most ``max_rows`` rows and ``max_bytes`` bytes are returned.
        """
        started = time.perf_counter()
        timeout = max(0.0, float(timeout))

        def failed(error: str, error_class: str) -> ExecResult:
            return ExecResult(ok=False, sql=sql, seconds=time.perf_counter() - started,
                              error=error, error_class=error_class)

        if not isinstance(sql, str) or not sql.strip():
            return failed("the query is empty", "UnsafeSQL")
        try:
            check_length(sql)
        except UnsafeSQLError as exc:
            return failed(exc.reason, "UnsafeSQL")
        request = {"op": "execute", "sql": sql, "timeout": timeout, "max_rows": int(max_rows),
                   "max_bytes": int(max_bytes), "max_cell_bytes": int(max_cell_bytes)}
        try:
            reply = self._pool.call(request, seconds=timeout)
        except WorkerStopped as stop:
            if stop.reason == "timeout":
                return failed(timeout_message(timeout), "Timeout")
            return failed(WORKER_ENDED, "WorkerEnded")
        except PoolClosed:
            return failed("the database is closed", "ProgrammingError")
        except PoolError as exc:
            return failed(f"the query could not be run: {exc}", "WorkerError")
        if not reply.get("ok"):
            return failed(str(reply.get("error")), str(reply.get("error_class") or "Error"))
        result = ExecResult.from_dict(reply["result"])
        result.sql, result.seconds = sql, time.perf_counter() - started
        return result

    def table_preview(self, table: str, limit: int = 20,
                      timeout: float | None = None) -> ExecResult:
        """The first ``limit`` rows of ``table``; ``truncated`` says whether it has more.
        ``timeout`` (seconds) is the caller's limit, the default query limit without it."""
        limit = max(0, int(limit))
        extra = {} if timeout is None else {"timeout": timeout}
        return self.execute(f"SELECT * FROM {quote_identifier(table)} LIMIT {limit + 1}",
                            max_rows=limit, **extra)

    # -- lifetime --------------------------------------------------------------------------------
    def close(self) -> None:
        self._finalizer()

    def __enter__(self) -> "Database":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __repr__(self) -> str:
        where = self.path or "in memory"
        return f"Database({self.name!r}, {where}, {self.size_bytes:,} bytes)"


def _file_uri(path: str, options: str) -> str:
    """A ``file:`` URI for ``path``; '?', '#', '%' and spaces are escaped."""
    return "file:" + quote(os.path.abspath(path)) + "?" + options


def _read_with_wal(path: str, wal_path: str, label: str) -> bytes:
    """A WAL-mode file and its -wal, merged in memory (nothing is written beside them)."""
    try:
        total = os.path.getsize(path) + os.path.getsize(wal_path)
        if total > MAX_SNAPSHOT_BYTES:
            raise DatabaseError(
                f"{label}: it has uncommitted changes in its -wal file and is too large "
                f"({_mib(total)}) to read with them in memory; checkpoint it first "
                f"(sqlite3 {label} 'PRAGMA wal_checkpoint(TRUNCATE)')")
        with open(path, "rb") as handle:
            data = handle.read()
        with open(wal_path, "rb") as handle:
            wal_data = handle.read()
        return wal.merge(data, wal_data)
    except OSError as exc:
        raise DatabaseError(f"{label}: cannot read the file ({exc.strerror or exc})") from None
    except wal.WalError as exc:
        raise DatabaseError(f"{label}: {exc}") from None


def open_database(path: str | os.PathLike, *, name: str | None = None) -> Database:
    """Open the SQLite file at ``path`` read-only and check that it is usable.

    Nothing is ever created beside the file: a WAL-mode file is read with ``immutable=1`` or,
    when its ``-wal`` holds changes, merged with them in memory.
    """
    path = os.fspath(path)
    label = _short(os.path.basename(path) or path, 120)
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
    name = name or _display_name(path)
    where = os.path.abspath(path)
    if not wal.is_wal_mode(head):
        return Database._open(label, name=name, path=where, size=size,
                              uri=_file_uri(path, "mode=ro"))
    wal_path = wal.wal_beside(path)
    if wal_path is None:
        return Database._open(label, name=name, path=where, size=size,
                              uri=_file_uri(path, "mode=ro&immutable=1"), wal_mode=True)
    data = _read_with_wal(path, wal_path, label)
    return Database._open(label, name=name, path=where, size=size,
                          data=wal.as_rollback_mode(data))
