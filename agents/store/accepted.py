"""Accepted answers: (question, SQL, result) pairs a user approved for a database.

They are the few-shot examples the example bank offers for later questions on the same
database, so each pair is stored once however often it is accepted, and removing the run it
came from keeps it. The run an answer was accepted from points at it (``runs.accepted_id``), so
the run's record shows what the user accepted beside what the model wrote.
"""

from __future__ import annotations

import json

from .connection import StoreConnection
from .schema import iso_utc


class AcceptedPart(StoreConnection):
    """The accepted-answer methods of :class:`~agents.store.Store`."""

    def accept(self, run_id: str | None, question: str, sql: str, db_name: str,
               result_preview: dict | None = None, author: str | None = None) -> int:
        """Keep a (question, SQL, result) pair the user approved; the same pair is stored once.

        The stored run ``run_id`` (if any) is linked to the pair as its accepted answer.
        """
        question, sql = (question or "").strip(), (sql or "").strip()
        if not question or not sql or not db_name:
            raise ValueError("an accepted answer needs a question, its SQL and the database name")
        with self._write() as db:
            row = db.execute(
                "SELECT id FROM accepted WHERE db_name = ? AND question = ? AND sql = ?",
                [db_name, question, sql]).fetchone()
            if row:
                accepted_id = row[0]
            else:
                accepted_id = db["accepted"].insert({
                    "run_id": run_id, "db_name": db_name, "question": question, "sql": sql,
                    "result_json": json.dumps(result_preview, default=str)
                    if result_preview else None,
                    "author": author, "created_at": iso_utc(None),
                }).last_pk
            if run_id:
                db.execute("UPDATE runs SET accepted_id = ? WHERE run_id = ?",
                           [accepted_id, run_id])
            return accepted_id

    def find_accepted(self, db_name: str, question: str, sql: str) -> dict | None:
        """The accepted answer already on record for this (question, SQL) pair, or None."""
        with self._lock:
            rows = list(self.db.query(
                "SELECT * FROM accepted WHERE db_name = ? AND question = ? AND sql = ?",
                [db_name, (question or "").strip(), (sql or "").strip()]))
        return _decoded(rows[0]) if rows else None

    def list_accepted(self, db_name: str | None = None) -> list[dict]:
        """Accepted answers, newest first, with ``result_preview`` decoded."""
        where = " WHERE db_name = ?" if db_name else ""
        sql = f"SELECT * FROM accepted{where} ORDER BY id DESC"
        with self._lock:
            rows = list(self.db.query(sql, [db_name] if db_name else []))
        return [_decoded(row) for row in rows]

    def get_accepted(self, accepted_id: int) -> dict | None:
        """One accepted answer (``result_preview`` decoded), or None."""
        with self._lock:
            rows = list(self.db.query("SELECT * FROM accepted WHERE id = ?", [accepted_id]))
        return _decoded(rows[0]) if rows else None

    def accepted_of_run(self, run_id: str | None) -> dict | None:
        """The answer accepted from the stored run ``run_id`` (``result_preview`` decoded), or
        None when the run is not stored or nothing was accepted from it."""
        if not run_id:
            return None
        with self._lock:
            rows = list(self.db.query(
                "SELECT acc.* FROM runs AS r JOIN accepted AS acc ON acc.id = r.accepted_id "
                "WHERE r.run_id = ?", [run_id]))
        return _decoded(rows[0]) if rows else None

    def remove_accepted(self, accepted_id: int) -> bool:
        """Remove an answer from the example bank; the runs it came from are no longer marked
        accepted. True if it existed."""
        with self._write() as db:
            db.execute("UPDATE runs SET accepted_id = NULL WHERE accepted_id = ?", [accepted_id])
            return db.execute("DELETE FROM accepted WHERE id = ?", [accepted_id]).rowcount > 0


def _decoded(row: dict) -> dict:
    raw = row.pop("result_json")
    row["result_preview"] = json.loads(raw) if raw else None
    return row
