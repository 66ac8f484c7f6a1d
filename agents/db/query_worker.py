"""What runs inside a query worker: one guarded read-only connection, requests in, plain data out.

A worker is forked by :mod:`agents.db.zygote` and driven by :mod:`agents.db.worker_pool`. It opens
the database once (a ``file:`` URI, or an upload's bytes copied in with ``deserialize``), then
answers requests until its socket closes. Everything that can take long on hostile input runs
here and not in the app's process: the SQL gate's parsing, the query, fetching its rows, the
integrity check and every introspection step. When one of them outlives its deadline the pool
kills this process; nothing here needs to cooperate.

Limits that hold even when a query does not stop: the address space (``RLIMIT_AS``: SQLite then
fails with "out of memory", Python with ``MemoryError``), the longest string or blob SQLite may
build (``SQLITE_LIMIT_LENGTH``) and temporary storage kept in memory (a sort never spills user
data to disk). SQLite's ``hard_heap_limit`` would also bound memory, but it turns on memory
accounting that doubles the cost of a small query. Replies are ``marshal`` data (no pickle:
nothing a worker sends can run code in the app). Errors are replies too; a worker never prints.
"""

from __future__ import annotations

import marshal
import resource
import sqlite3
from multiprocessing.connection import Connection
from typing import Any

from agents.db import introspection
from agents.db.exec_result import describe_error
from agents.db.safe_sql import Deadline, execute_readonly, install_guards
from agents.db.schema import Schema, Table

WORKER_MEMORY_BYTES = 1024 * 1024 * 1024  # address space a worker may add to what it starts with
SQLITE_VALUE_BYTES = 64 * 1024 * 1024      # the longest string or blob a query may build
MAX_REQUEST_BYTES = 1 << 31


def _die_with_parent() -> None:
    """Ask Linux to kill this worker when its template process dies."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
    except (OSError, AttributeError):
        pass


def _limit_memory(upload_bytes: int, extra: int) -> None:
    """Cap this process's address space at what it uses now plus ``extra`` (and room for an
    upload, which is held twice while it is copied in)."""
    try:
        with open("/proc/self/statm") as handle:
            in_use = int(handle.read().split()[0]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        return
    limit = in_use + extra + 2 * upload_bytes
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ValueError, OSError):
        pass


class _Worker:
    def __init__(self, channel: Connection):
        self.channel = channel
        self.conn: sqlite3.Connection | None = None

    # -- requests ---------------------------------------------------------------------------
    def open(self, request: dict) -> dict:
        size = int(request.get("size") or 0)
        _limit_memory(size, int(request.get("memory") or WORKER_MEMORY_BYTES))
        if request.get("uri"):
            conn = sqlite3.connect(request["uri"], uri=True, check_same_thread=False,
                                   isolation_level=None)
        else:
            data = self.channel.recv_bytes(MAX_REQUEST_BYTES)
            conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
            conn.deserialize(data)  # SQLite copies the bytes into its own memory
            del data
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, SQLITE_VALUE_BYTES)
        conn.execute("PRAGMA temp_store = MEMORY")  # sorts never spill user data to disk
        install_guards(conn)
        self.conn = conn
        return {"ok": True}

    def verify(self, request: dict) -> dict:
        """How many tables and views the catalogue lists, and a time-boxed integrity check
        (``problems`` is None when time ran out first: the part checked was sound)."""
        try:
            objects = self.conn.execute(
                "SELECT count(*) FROM sqlite_master WHERE type IN ('table', 'view') "
                "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            return {"ok": True, "damage": describe_error(exc)[0]}
        deadline = Deadline(self.conn, float(request["seconds"]))
        try:
            with deadline:
                problems = [str(r[0]) for r in self.conn.execute("PRAGMA quick_check(5)")]
        except sqlite3.DatabaseError as exc:
            if not deadline.expired:
                return {"ok": True, "damage": describe_error(exc)[0]}
            problems = None
        return {"ok": True, "objects": objects, "problems": problems}

    def structure(self, _request: dict) -> dict:
        tables, foreign_keys, unreadable = introspection.read_structure(self.conn)
        schema = Schema(db_name="", tables=tables, foreign_keys=foreign_keys).to_dict()
        return {"ok": True, "schema": schema, "unreadable": [list(u) for u in unreadable]}

    def examples(self, request: dict) -> dict:
        table = _table(request["table"])
        return {"ok": True,
                "examples": introspection.table_examples(self.conn, table, request["seconds"])}

    def count(self, request: dict) -> dict:
        table = _table(request["table"])
        count, estimated = introspection.table_count(self.conn, table, request["seconds"])
        return {"ok": True, "count": count, "estimated": estimated}

    def execute(self, request: dict) -> dict:
        result = execute_readonly(self.conn, request["sql"], timeout=request["timeout"],
                                  max_rows=request["max_rows"], max_bytes=request["max_bytes"],
                                  max_cell_bytes=request["max_cell_bytes"])
        return {"ok": True, "result": result.to_dict()}

    # -- loop -------------------------------------------------------------------------------
    def handle(self, request: Any) -> dict:
        op = request.get("op") if isinstance(request, dict) else None
        if op == "open":
            return self.open(request)
        if self.conn is None or op not in ("verify", "structure", "examples", "count",
                                           "execute"):
            return {"ok": False, "error": f"unknown request {op!r}", "error_class": "WorkerError"}
        return getattr(self, op)(request)


def _table(data: dict) -> Table:
    return Schema.from_dict({"tables": [data]}).tables[0]


def serve(fd: int) -> int:
    """Answer requests on the socket ``fd`` until it closes; the process's exit code."""
    _die_with_parent()
    channel = Connection(fd)
    worker = _Worker(channel)
    while True:
        try:
            request = marshal.loads(channel.recv_bytes(MAX_REQUEST_BYTES))
        except (EOFError, OSError, ValueError, TypeError):
            return 0
        try:
            reply = worker.handle(request)
        except Exception as exc:  # noqa: BLE001 - every failure is an answer, never a trace
            error, error_class = describe_error(exc, worker.conn)
            reply = {"ok": False, "error": error, "error_class": error_class}
        try:
            channel.send_bytes(marshal.dumps(reply))
        except MemoryError:
            error, error_class = describe_error(MemoryError())
            channel.send_bytes(marshal.dumps({"ok": False, "error": error,
                                              "error_class": error_class}))
        except (OSError, ValueError):
            return 0
