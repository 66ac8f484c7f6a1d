"""Knowledge notes: what a user knows about a database that its schema does not say.

Definitions ("revenue: UnitPrice * Quantity"), conventions ("active means status = 1") and
answers the user accepted and chose to keep as knowledge. The enabled notes of a database are
given to every run on it as evidence (see :mod:`agents.runs.run_context`); disabling a note keeps it
without giving it to new runs.
"""

from __future__ import annotations

from .access import Viewer, viewer_or_local
from .connection import StoreConnection
from .schema import iso_utc

MAX_NOTE_CHARS = 2000
NOTE_SOURCES = ("user", "accepted")


def _clean(title: str | None, text: str | None) -> tuple[str, str]:
    title, text = (title or "").strip(), (text or "").strip()
    if not text:
        raise ValueError("a knowledge note needs a text (the definition or the fact itself)")
    if len(title) + len(text) > MAX_NOTE_CHARS:
        raise ValueError(f"a knowledge note may be at most {MAX_NOTE_CHARS} characters long; "
                         f"this one has {len(title) + len(text)}")
    return title, text


class KnowledgePart(StoreConnection):
    """The knowledge-note methods of :class:`~agents.store.Store`."""

    def add_note(self, db_name: str, text: str, title: str = "", *, source: str = "user",
                 accepted_id: int | None = None, shared: bool = True,
                 viewer: Viewer | None = None) -> int:
        """Keep a note for ``db_name``; the same title and text are stored once per owner.
        ``shared`` says whether the team's runs are given it (in team mode)."""
        viewer = viewer_or_local(viewer)
        if not db_name:
            raise ValueError("a knowledge note belongs to a database; none was given")
        if source not in NOTE_SOURCES:
            raise ValueError(f"source must be one of {', '.join(NOTE_SOURCES)}; got {source!r}")
        title, text = _clean(title, text)
        now = iso_utc(None)
        with self._write() as db:
            row = db.execute("SELECT id FROM knowledge WHERE db_name = ? AND title = ? AND "
                             "text = ? AND owner = ?",
                             [db_name, title, text, viewer.owner]).fetchone()
            if row:
                return row[0]
            return db["knowledge"].insert({
                "db_name": db_name, "title": title, "text": text, "enabled": 1,
                "source": source, "accepted_id": accepted_id, "created_at": now,
                "updated_at": now, "owner": viewer.owner,
                "shared": int(bool(shared))}).last_pk

    def update_note(self, note_id: int, *, title: str | None = None, text: str | None = None,
                    enabled: bool | None = None, shared: bool | None = None,
                    viewer: Viewer | None = None) -> None:
        note = self.get_note(note_id, viewer=viewer)
        if note is None:
            raise ValueError(f"there is no knowledge note {note_id}")
        viewer_or_local(viewer).check_change(note, "note")
        title, text = _clean(note["title"] if title is None else title,
                             note["text"] if text is None else text)
        values = {"title": title, "text": text, "updated_at": iso_utc(None)}
        if enabled is not None:
            values["enabled"] = int(bool(enabled))
        if shared is not None:
            values["shared"] = int(bool(shared))
        with self._write() as db:
            db["knowledge"].update(note_id, values)

    def get_note(self, note_id: int, *, viewer: Viewer | None = None) -> dict | None:
        seen, params = viewer_or_local(viewer).visible()
        with self._lock:
            rows = list(self.db.query(f"SELECT * FROM knowledge WHERE id = ? AND {seen}",
                                      [note_id, *params]))
        return rows[0] if rows else None

    def list_notes(self, db_name: str, *, enabled_only: bool = False,
                   viewer: Viewer | None = None) -> list[dict]:
        """The notes of a database ``viewer`` sees, in the order they were written."""
        seen, params = viewer_or_local(viewer).visible()
        where = " AND enabled = 1" if enabled_only else ""
        with self._lock:
            return list(self.db.query(
                f"SELECT * FROM knowledge WHERE db_name = ?{where} AND {seen} ORDER BY id",
                [db_name, *params]))

    def private_note_ids(self, *, viewer: Viewer | None = None) -> set[int]:
        """The viewer's own notes that the team does not see (team mode; none otherwise): a
        run given one of them is not shared by default."""
        viewer = viewer_or_local(viewer)
        if not viewer.team:
            return set()
        with self._lock:
            return {r[0] for r in self.db.execute(
                "SELECT id FROM knowledge WHERE owner = ? AND shared = 0", [viewer.user])}

    def remove_note(self, note_id: int, *, viewer: Viewer | None = None) -> bool:
        note = self.get_note(note_id, viewer=viewer)
        if note is None:
            return False
        viewer_or_local(viewer).check_change(note, "note")
        with self._write() as db:
            return db.execute("DELETE FROM knowledge WHERE id = ?", [note_id]).rowcount > 0
