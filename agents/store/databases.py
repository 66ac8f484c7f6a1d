"""The saved-database list: uploads kept as read-only copies and server files registered by path.

Only the list lives here (name, kind, where the file is, its size); copying, checking and opening
the files is :mod:`agents.db.library`'s job.
"""

from __future__ import annotations

from .access import Viewer, viewer_or_local
from .connection import StoreConnection
from .schema import iso_utc

DATABASE_KINDS = ("upload", "path")


class DatabasesPart(StoreConnection):
    """The saved-database methods of :class:`~agents.store.Store`."""

    def put_saved_database(self, name: str, kind: str, path: str, *, file_name: str = "",
                           size_bytes: int = 0, shared: bool = True,
                           viewer: Viewer | None = None) -> None:
        """Add the entry called ``name``, owned by ``viewer``, or replace one ``viewer`` may
        change (:mod:`agents.db.library` picks a free name rather than replace another's)."""
        if kind not in DATABASE_KINDS:
            raise ValueError(f"kind must be one of {', '.join(DATABASE_KINDS)}; got {kind!r}")
        viewer = viewer_or_local(viewer)
        old = self.saved_entry(name)
        viewer.check_change(old, "database")
        owner = old["owner"] if old else viewer.owner  # a replaced entry keeps whose it is
        shared = bool(old["shared"]) if old else shared
        with self._write() as db:
            db["saved_databases"].upsert({
                "name": name, "kind": kind, "path": path, "file_name": file_name or name,
                "size_bytes": int(size_bytes), "added_at": iso_utc(None),
                "owner": owner, "shared": int(bool(shared))}, pk="name")

    def saved_databases(self, *, viewer: Viewer | None = None) -> list[dict]:
        """Every saved database ``viewer`` sees, by name."""
        seen, params = viewer_or_local(viewer).visible()
        with self._lock:
            return list(self.db.query(
                f"SELECT * FROM saved_databases WHERE {seen} ORDER BY name", params))

    def saved_database(self, name: str, *, viewer: Viewer | None = None) -> dict | None:
        entry = self.saved_entry(name)
        return entry if viewer_or_local(viewer).may_see(entry) else None

    def saved_entry(self, name: str) -> dict | None:
        """The entry called ``name`` whoever owns it: names are unique across the team, so a
        new upload needs to know which are taken (nothing else should read it)."""
        with self._lock:
            rows = list(self.db.query("SELECT * FROM saved_databases WHERE name = ?", [name]))
        return rows[0] if rows else None

    def all_saved_entries(self) -> list[dict]:
        """Every entry whoever owns it, for what concerns them all: the library's size limit,
        and deleting a kept copy only when no entry uses it (nothing else should read it)."""
        with self._lock:
            return list(self.db.query("SELECT * FROM saved_databases ORDER BY name"))

    def set_database_shared(self, name: str, shared: bool, *,
                            viewer: Viewer | None = None) -> None:
        """Share a saved database with the team or keep it to its owner."""
        entry = self.saved_database(name, viewer=viewer)
        if entry is None:
            raise ValueError(f"there is no saved database {name}")
        viewer_or_local(viewer).check_change(entry, "database")
        with self._write() as db:
            db.execute("UPDATE saved_databases SET shared = ? WHERE name = ?",
                       [int(bool(shared)), name])

    def drop_saved_database(self, name: str, *, viewer: Viewer | None = None) -> bool:
        entry = self.saved_database(name, viewer=viewer)
        if entry is None:
            return False
        viewer_or_local(viewer).check_change(entry, "database")
        with self._write() as db:
            return db.execute("DELETE FROM saved_databases WHERE name = ?",
                              [name]).rowcount > 0
