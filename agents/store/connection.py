"""Opening the store file: WAL mode, busy timeout, one lock, write transactions, migrations.

Several browser sessions and processes write to the same file, so every write takes the write
lock up front (``BEGIN IMMEDIATE``) and waits on the busy timeout rather than failing; one
:class:`StoreConnection` is shared between threads behind an ``RLock``. The run, annotation,
accepted-answer and export parts of :class:`~agents.store.Store` build on this class.
"""

from __future__ import annotations

import sqlite3
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Self

import sqlite_utils

from agents.core.paths import studio_home
from .schema import MIGRATIONS, SCHEMA_VERSION

BUSY_TIMEOUT_S = 5.0


DAMAGED, UNWRITABLE, EMPTY, NEWER, BUSY = "damaged", "unwritable", "empty", "newer", "busy"


class StoreError(Exception):
    """The store file cannot be used; ``kind`` says why: :data:`DAMAGED` (not a database,
    corrupt), :data:`UNWRITABLE` (a read-only folder or file, a full disk), :data:`EMPTY`
    (0 bytes), :data:`NEWER` (written by a newer studio) or :data:`BUSY` (locked by another
    process, or anything else SQLite reports: nothing to do to the file)."""

    def __init__(self, message: str, kind: str = DAMAGED):
        super().__init__(message)
        self.kind = kind


def _advice(path: Path, exc: sqlite3.Error) -> StoreError:
    """What to do about a store that cannot be opened: a damaged file is moved away, but a
    read-only folder or a full disk is not the file's fault (moving it would lose nothing but
    fix nothing either)."""
    text = str(exc).lower()
    code = str(getattr(exc, "sqlite_errorname", "") or "")
    if code in ("SQLITE_NOTADB", "SQLITE_CORRUPT") or "not a database" in text or \
            "malformed" in text:
        return StoreError(f"The run store {path} cannot be opened: {exc}. It looks damaged: "
                          "move the file away (keep it: its runs may be recoverable) to start "
                          "a fresh store.", DAMAGED)
    if "readonly" in text or "read-only" in text or "unable to open" in text:
        return StoreError(f"The run store {path} cannot be written: {exc}. Check that "
                          f"{path.parent} and the file are writable by the studio.", UNWRITABLE)
    if "disk is full" in text or "disk i/o" in text:
        return StoreError(f"The run store {path} cannot be written: {exc}. Free some disk "
                          "space; the store is kept as it is.", UNWRITABLE)
    return StoreError(f"The run store {path} cannot be used just now: {exc}. Another process "
                      "may hold it (an evaluation, a backup); try again in a moment. The file "
                      "is left as it is.", BUSY)


def default_path() -> Path:
    return studio_home() / "studio.db"


class StoreConnection:
    """The open store file; see the module docstring."""

    def __init__(self, path: Path | str | None = None, *, read_only: str | None = None):
        """``read_only``: open an existing, current store without writing to it; every write
        then raises :class:`StoreError` with this text (why the store cannot be written)."""
        self.path = Path(path) if path is not None else default_path()
        self.read_only = read_only
        if read_only:
            self._open_read_only()
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            empty = self.path.is_file() and self.path.stat().st_size == 0 and \
                not Path(f"{self.path}-wal").exists()
        except OSError as exc:
            raise StoreError(f"The run store's folder {self.path.parent} cannot be used: "
                             f"{exc.strerror or exc}. Check that it exists and is writable.",
                             UNWRITABLE) from exc
        if empty:  # a store emptied by a failed copy or a full disk: never silently a new one
            raise StoreError(f"The run store {self.path} is empty (0 bytes), so its runs and "
                             "notes are not there; restore it from a copy, or delete the empty "
                             "file to start a fresh store. Nothing was written to it.", EMPTY)
        self._lock = threading.RLock()
        try:
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, check_same_thread=False)
        except sqlite3.Error as exc:
            raise _advice(self.path, exc) from exc
        try:
            self.db = sqlite_utils.Database(conn, execute_plugins=False)
            self.db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            self.db.execute("PRAGMA foreign_keys = ON")
            self.db.enable_wal()
            self._migrate()
        except StoreError:
            conn.close()
            raise
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise _advice(self.path, exc) from exc

    def _open_read_only(self) -> None:
        self._lock = threading.RLock()
        row, problem = None, None
        # mode=ro still needs the -shm file of a WAL store; on a full disk or in a read-only
        # folder it cannot be made, and immutable=1 reads the file as it stands (what was last
        # checkpointed into it) without one
        for flags in ("mode=ro", "immutable=1"):
            conn = None
            try:
                conn = sqlite3.connect(f"{self.path.resolve().as_uri()}?{flags}", uri=True,
                                       timeout=BUSY_TIMEOUT_S, check_same_thread=False)
                self.db = sqlite_utils.Database(conn, execute_plugins=False)
                row = self.db.execute(
                    "SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
                break
            except sqlite3.Error as exc:
                problem = exc
                if conn is not None:
                    conn.close()
        else:
            raise _advice(self.path, problem) from problem
        if not row or int(row[0]) != SCHEMA_VERSION:
            conn.close()
            raise StoreError(f"{self.read_only} It cannot be read as it is either (schema "
                             f"{row[0] if row else 'unknown'}, this studio reads "
                             f"{SCHEMA_VERSION}).", UNWRITABLE)

    def close(self) -> None:
        with self._lock:
            self.db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def journal_mode(self) -> str:
        with self._lock:
            return self.db.journal_mode

    @contextmanager
    def _write(self) -> Iterator[sqlite_utils.Database]:
        """One write transaction; IMMEDIATE takes the write lock up front so that concurrent
        writers queue on the busy timeout instead of failing when upgrading a read lock."""
        if self.read_only:
            raise StoreError(f"Nothing can be saved: {self.read_only}", UNWRITABLE)
        with self._lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield self.db
            except BaseException:
                self.db.rollback()
                raise
            self.db.execute("COMMIT")

    def _migrate(self) -> None:
        with self._write() as db:
            db["meta"].create({"key": str, "value": str}, pk="key", if_not_exists=True)
            row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            version = int(row[0]) if row else 0
            if version > SCHEMA_VERSION:
                raise StoreError(f"The run store {self.path} was written by a newer version of the "
                                 f"studio (schema {version}, this one knows {SCHEMA_VERSION}).",
                                 NEWER)
            for target in range(version + 1, SCHEMA_VERSION + 1):
                MIGRATIONS[target](db)
            db["meta"].upsert({"key": "schema_version", "value": str(SCHEMA_VERSION)}, pk="key")
