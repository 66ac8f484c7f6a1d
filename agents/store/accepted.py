"""Accepted answers: (question, SQL, result) pairs a user approved for a database.

They are the few-shot examples the example bank offers for later questions on the same
database, so each pair is stored once however often it is accepted, and removing the run it
came from keeps it. The run an answer was accepted from points at it (``runs.accepted_id``), so
the run's record shows what the user accepted beside what the model wrote.
"""

from __future__ import annotations

import json

from .access import Viewer, viewer_or_local
from .connection import StoreConnection
from .schema import iso_utc


class AcceptedPart(StoreConnection):
    """The accepted-answer methods of :class:`~agents.store.Store`."""

    def accept(self, run_id: str | None, question: str, sql: str, db_name: str,
               result_preview: dict | None = None, author: str | None = None, *,
               shared: bool = True, viewer: Viewer | None = None) -> int:
        """Keep a (question, SQL, result) pair the user approved; the same pair is stored once
        per owner (in team mode the author is the signed-in user, and ``shared`` says whether
        the team's runs may use it as an example).

        The stored run ``run_id`` (if any) is linked to the pair as its accepted answer.
        """
        viewer = viewer_or_local(viewer)
        if viewer.team:
            author = viewer.user
        question, sql = (question or "").strip(), (sql or "").strip()
        if not question or not sql or not db_name:
            raise ValueError("an accepted answer needs a question, its SQL and the database name")
        with self._write() as db:
            row = db.execute(
                "SELECT id FROM accepted WHERE db_name = ? AND question = ? AND sql = ? "
                "AND owner = ?", [db_name, question, sql, viewer.owner]).fetchone()
            if row:
                accepted_id = row[0]
            else:
                accepted_id = db["accepted"].insert({
                    "run_id": run_id, "db_name": db_name, "question": question, "sql": sql,
                    "result_json": json.dumps(result_preview, default=str)
                    if result_preview else None,
                    "author": author, "created_at": iso_utc(None),
                    "owner": viewer.owner, "shared": int(bool(shared)),
                }).last_pk
            owner = db.execute("SELECT owner, shared FROM runs WHERE run_id = ?",
                               [run_id]).fetchone() if run_id else None
            if owner is not None and viewer.may_change({"owner": owner[0], "shared": owner[1]}):
                # the run records what was accepted from it, unless it is someone else's
                db.execute("UPDATE runs SET accepted_id = ? WHERE run_id = ?",
                           [accepted_id, run_id])
            return accepted_id

    def find_accepted(self, db_name: str, question: str, sql: str, *,
                      viewer: Viewer | None = None) -> dict | None:
        """The accepted answer ``viewer`` sees on record for this (question, SQL) pair, or
        None."""
        seen, params = viewer_or_local(viewer).visible()
        with self._lock:
            rows = list(self.db.query(
                "SELECT * FROM accepted WHERE db_name = ? AND question = ? AND sql = ? "
                f"AND {seen} ORDER BY id",
                [db_name, (question or "").strip(), (sql or "").strip(), *params]))
        return _decoded(rows[0]) if rows else None

    def list_accepted(self, db_name: str | None = None, *,
                      viewer: Viewer | None = None) -> list[dict]:
        """The accepted answers ``viewer`` sees, newest first, with ``result_preview``
        decoded."""
        seen, params = viewer_or_local(viewer).visible()
        where = f" WHERE {seen}" + (" AND db_name = ?" if db_name else "")
        sql = f"SELECT * FROM accepted{where} ORDER BY id DESC"
        with self._lock:
            rows = list(self.db.query(sql, [*params, db_name] if db_name else params))
        return [_decoded(row) for row in rows]

    def get_accepted(self, accepted_id: int, *, viewer: Viewer | None = None) -> dict | None:
        """One accepted answer (``result_preview`` decoded), or None."""
        seen, params = viewer_or_local(viewer).visible()
        with self._lock:
            rows = list(self.db.query(f"SELECT * FROM accepted WHERE id = ? AND {seen}",
                                      [accepted_id, *params]))
        return _decoded(rows[0]) if rows else None

    def accepted_of_run(self, run_id: str | None, *,
                        viewer: Viewer | None = None) -> dict | None:
        """The answer accepted from the stored run ``run_id`` (``result_preview`` decoded), or
        None when the run is not stored or nothing was accepted from it."""
        if not run_id:
            return None
        seen, params = viewer_or_local(viewer).visible("acc")
        with self._lock:
            rows = list(self.db.query(
                "SELECT acc.* FROM runs AS r JOIN accepted AS acc ON acc.id = r.accepted_id "
                f"WHERE r.run_id = ? AND {seen}", [run_id, *params]))
        return _decoded(rows[0]) if rows else None

    def private_answer_dbs(self, *, viewer: Viewer | None = None) -> set[str]:
        """The databases where the viewer has accepted answers the team does not see (team
        mode; none otherwise): the example bank of a run there may show one of them."""
        viewer = viewer_or_local(viewer)
        if not viewer.team:
            return set()
        with self._lock:
            return {r[0] for r in self.db.execute(
                "SELECT DISTINCT db_name FROM accepted WHERE owner = ? AND shared = 0",
                [viewer.user])}

    def set_accepted_shared(self, accepted_id: int, shared: bool, *,
                            viewer: Viewer | None = None) -> None:
        """Offer an accepted answer to the team's runs as an example, or keep it to oneself."""
        row = self.get_accepted(accepted_id, viewer=viewer)
        if row is None:
            raise ValueError(f"there is no accepted answer {accepted_id}")
        viewer_or_local(viewer).check_change(row, "accepted answer")
        with self._write() as db:
            db.execute("UPDATE accepted SET shared = ? WHERE id = ?",
                       [int(bool(shared)), accepted_id])

    def remove_accepted(self, accepted_id: int, *, viewer: Viewer | None = None) -> bool:
        """Remove an answer from the example bank; the runs it came from are no longer marked
        accepted. True if it existed. Only its owner or an admin may."""
        row = self.get_accepted(accepted_id, viewer=viewer)
        if row is None:
            return False
        viewer_or_local(viewer).check_change(row, "accepted answer")
        with self._write() as db:
            db.execute("UPDATE runs SET accepted_id = NULL WHERE accepted_id = ?", [accepted_id])
            return db.execute("DELETE FROM accepted WHERE id = ?", [accepted_id]).rowcount > 0


def _decoded(row: dict) -> dict:
    raw = row.pop("result_json")
    row["result_preview"] = json.loads(raw) if raw else None
    return row
