"""Knowledge notes: what a user knows about a database that its schema does not say.

Definitions ("revenue: UnitPrice * Quantity"), conventions ("active means status = 1") and
answers the user accepted and chose to keep as knowledge. The enabled notes of a database are
given to every run on it as evidence (see :mod:`agents.runs.run_context`); disabling a note keeps it
without giving it to new runs.
"""

from __future__ import annotations

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
                 accepted_id: int | None = None) -> int:
        """Keep a note for ``db_name``; the same title and text are stored once."""
        if not db_name:
            raise ValueError("a knowledge note belongs to a database; none was given")
        if source not in NOTE_SOURCES:
            raise ValueError(f"source must be one of {', '.join(NOTE_SOURCES)}; got {source!r}")
        title, text = _clean(title, text)
        now = iso_utc(None)
        with self._write() as db:
            row = db.execute("SELECT id FROM knowledge WHERE db_name = ? AND title = ? AND "
                             "text = ?", [db_name, title, text]).fetchone()
            if row:
                return row[0]
            return db["knowledge"].insert({
                "db_name": db_name, "title": title, "text": text, "enabled": 1,
                "source": source, "accepted_id": accepted_id, "created_at": now,
                "updated_at": now}).last_pk

    def update_note(self, note_id: int, *, title: str | None = None, text: str | None = None,
                    enabled: bool | None = None) -> None:
        note = self.get_note(note_id)
        if note is None:
            raise ValueError(f"there is no knowledge note {note_id}")
        title, text = _clean(note["title"] if title is None else title,
                             note["text"] if text is None else text)
        values = {"title": title, "text": text, "updated_at": iso_utc(None)}
        if enabled is not None:
            values["enabled"] = int(bool(enabled))
        with self._write() as db:
            db["knowledge"].update(note_id, values)

    def get_note(self, note_id: int) -> dict | None:
        with self._lock:
            rows = list(self.db.query("SELECT * FROM knowledge WHERE id = ?", [note_id]))
        return rows[0] if rows else None

    def list_notes(self, db_name: str, *, enabled_only: bool = False) -> list[dict]:
        """The notes of a database in the order they were written."""
        where = " AND enabled = 1" if enabled_only else ""
        with self._lock:
            return list(self.db.query(
                f"SELECT * FROM knowledge WHERE db_name = ?{where} ORDER BY id", [db_name]))

    def remove_note(self, note_id: int) -> bool:
        with self._write() as db:
            return db.execute("DELETE FROM knowledge WHERE id = ?", [note_id]).rowcount > 0
