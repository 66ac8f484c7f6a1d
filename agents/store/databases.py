"""The saved-database list: uploads kept as read-only copies and server files registered by path.

Only the list lives here (name, kind, where the file is, its size); copying, checking and opening
the files is :mod:`agents.db.library`'s job.
"""

from __future__ import annotations

from .connection import StoreConnection
from .schema import iso_utc

DATABASE_KINDS = ("upload", "path")


class DatabasesPart(StoreConnection):
    """The saved-database methods of :class:`~agents.store.Store`."""

    def put_saved_database(self, name: str, kind: str, path: str, *, file_name: str = "",
                           size_bytes: int = 0) -> None:
        """Add or replace the entry called ``name``."""
        if kind not in DATABASE_KINDS:
            raise ValueError(f"kind must be one of {', '.join(DATABASE_KINDS)}; got {kind!r}")
        with self._write() as db:
            db["saved_databases"].upsert({
                "name": name, "kind": kind, "path": path, "file_name": file_name or name,
                "size_bytes": int(size_bytes), "added_at": iso_utc(None)}, pk="name")

    def saved_databases(self) -> list[dict]:
        """Every saved database, by name."""
        with self._lock:
            return list(self.db.query("SELECT * FROM saved_databases ORDER BY name"))

    def saved_database(self, name: str) -> dict | None:
        with self._lock:
            rows = list(self.db.query("SELECT * FROM saved_databases WHERE name = ?", [name]))
        return rows[0] if rows else None

    def drop_saved_database(self, name: str) -> bool:
        with self._write() as db:
            return db.execute("DELETE FROM saved_databases WHERE name = ?",
                              [name]).rowcount > 0
