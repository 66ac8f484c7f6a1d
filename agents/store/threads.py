"""Conversation threads: which runs followed up on which, in order.

A follow-up run records its thread in ``Run.context`` (see :mod:`agents.runs.run_context`); saving it
here as well lets a page list a whole thread without reading every stored trace.
"""

from __future__ import annotations

from agents.core.events import Run
from .access import Viewer, viewer_or_local
from .connection import StoreConnection
from .schema import RUN_COLUMNS, iso_utc


class ThreadsPart(StoreConnection):
    """The thread methods of :class:`~agents.store.Store`."""

    def add_to_thread(self, run: Run, *, viewer: Viewer | None = None) -> str | None:
        """Record ``run`` in its thread (its first question starts one); the thread id, or None
        for a run that is not part of a conversation. The thread is the store's to say, not
        the run's: a follow-up joins the thread of the run it follows (which ``viewer`` must
        be able to see), a run that follows none only its own; a run naming another thread
        is kept, but in no thread, so nobody joins or blocks another's conversation."""
        context = run.context or {}
        thread_id = context.get("thread_id")
        if not thread_id:
            return None
        previous = (context.get("follow_up") or {}).get("run_id")
        seen, params = viewer_or_local(viewer).visible("r")
        with self._write() as db:
            if previous:
                if not db.execute(f"SELECT 1 FROM runs AS r WHERE r.run_id = ? AND {seen}",
                                  [previous, *params]).fetchone():
                    return None
                row = db.execute("SELECT thread_id FROM thread_runs WHERE run_id = ?",
                                 [previous]).fetchone()
                if thread_id != (row[0] if row else previous):
                    return None
            elif thread_id != run.run_id:
                row = db.execute("SELECT thread_id FROM thread_runs WHERE run_id = ?",
                                 [run.run_id]).fetchone()
                if not row or row[0] != thread_id:
                    return None
            if previous and not db.execute("SELECT 1 FROM thread_runs WHERE run_id = ?",
                                           [previous]).fetchone():
                db["thread_runs"].insert({"run_id": previous, "thread_id": thread_id,
                                          "previous_run_id": None, "position": 0,
                                          "created_at": iso_utc(None)})
            row = db.execute("SELECT COALESCE(MAX(position), -1) + 1 FROM thread_runs "
                             "WHERE thread_id = ? AND run_id != ?",
                             [thread_id, run.run_id]).fetchone()
            db["thread_runs"].upsert({"run_id": run.run_id, "thread_id": thread_id,
                                      "previous_run_id": previous, "position": row[0],
                                      "created_at": iso_utc(None)}, pk="run_id")
        return thread_id

    def thread_of(self, run_id: str) -> str | None:
        with self._lock:
            row = self.db.execute("SELECT thread_id FROM thread_runs WHERE run_id = ?",
                                  [run_id]).fetchone()
        return row[0] if row else None

    def thread_runs(self, thread_id: str, *, viewer: Viewer | None = None) -> list[dict]:
        """The runs of a thread ``viewer`` may see, in the order they were asked (list
        columns, no trace)."""
        columns = ", ".join(f"r.{c}" for c in RUN_COLUMNS)
        seen, params = viewer_or_local(viewer).visible("r")
        with self._lock:
            return list(self.db.query(
                f"SELECT {columns}, t.position, t.previous_run_id FROM thread_runs AS t "
                f"JOIN runs AS r ON r.run_id = t.run_id WHERE t.thread_id = ? AND {seen} "
                "ORDER BY t.position, r.started_at", [thread_id, *params]))
