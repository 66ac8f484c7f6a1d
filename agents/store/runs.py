"""Saving runs with their full trace, and finding them again by filter.

A run is stored twice over: its filter columns (database, pipeline, status, tokens, ...) for
lists and searches, and its whole trace as JSON, from which :meth:`Run.from_dict` rebuilds it for
replay without any model call. A list row carries the run's outcome (does its SQL run?), the
accepted answer made from it and its latest annotation beside it.
"""

from __future__ import annotations

import json

from agents.core.events import Run
from agents.pipelines import load_run
from agents.core.outcome import run_outcome
from .access import Viewer, viewer_or_local
from .connection import StoreConnection
from .schema import ANNOTATION_COLUMNS, RUN_COLUMNS, iso_utc
from .taxonomy import SOURCES, UNANNOTATED

FILTER_COLUMNS = ("db_name", "pipeline", "status", "outcome", "source", "model", "owner")


class RunsPart(StoreConnection):
    """The run methods of :class:`~agents.store.Store`."""

    def save_run(self, run: Run, *, source: str = "app", db_label: str | None = None,
                 shared: bool = True, viewer: Viewer | None = None) -> str:
        """Insert or update ``run`` (keyed by ``run.run_id``) and return its id. A new run
        belongs to ``viewer``; saving it again (an edit, a resumed step) keeps its owner and
        sharing, and is only allowed to whoever may change it."""
        if source not in SOURCES:
            raise ValueError(f"source must be one of {', '.join(SOURCES)}; got {source!r}")
        viewer = viewer_or_local(viewer)
        with self._lock:
            rows = list(self.db.query("SELECT owner, shared FROM runs WHERE run_id = ?",
                                      [run.run_id]))
        if rows:
            viewer.check_change(rows[0], "run")
            owner, shared = rows[0]["owner"], bool(rows[0]["shared"])
        else:
            owner = viewer.owner
        result = run.result or {}
        record = {
            "run_id": run.run_id,
            "created_at": iso_utc(run.started_at),
            "started_at": run.started_at,
            "db_name": run.db_name,
            "db_label": db_label or run.db_name,
            "pipeline": run.pipeline,
            "question": run.question,
            "evidence": run.evidence or "",
            "status": run.status,
            "outcome": run_outcome(run),
            "error": run.error,
            "final_sql": run.final_sql,
            "model": run.model,
            "steps": len(run.events),
            "llm_calls": run.llm_calls,
            "prompt_tokens": run.prompt_tokens,
            "completion_tokens": run.completion_tokens,
            "seconds": round(run.seconds, 3) if run.finished_at is not None else None,
            "result_rows": result.get("row_count") if result.get("ok") else None,
            "parent_run_id": run.parent_run_id,
            "source": source,
            "owner": owner,
            "shared": int(bool(shared)),
            "saved_at": iso_utc(None),
            "run_json": json.dumps(run.to_dict(), default=str, ensure_ascii=False),
        }
        with self._write() as db:
            db["runs"].upsert(record, pk="run_id")
        return run.run_id

    def get_run(self, run_id: str, *, viewer: Viewer | None = None) -> Run | None:
        """The stored run rebuilt as a :class:`Run` (for replay), or None if there is none
        (or ``viewer`` may not see it)."""
        seen, params = viewer_or_local(viewer).visible()
        with self._lock:
            row = self.db.execute(f"SELECT run_json FROM runs WHERE run_id = ? AND {seen}",
                                  [run_id, *params]).fetchone()
        return load_run(json.loads(row[0])) if row else None

    def run_info(self, run_id: str, *, viewer: Viewer | None = None) -> dict | None:
        """The filter columns of one run plus its latest annotation (no trace)."""
        rows = self._select_runs("r.run_id = ?", [run_id], limit=1, viewer=viewer)
        return rows[0] if rows else None

    def set_run_shared(self, run_id: str, shared: bool, *, viewer: Viewer | None = None) -> None:
        """Share a run with the team or make it private again (its owner or an admin)."""
        row = self.run_info(run_id, viewer=viewer)
        if row is None:
            raise ValueError(f"there is no run {run_id}")
        viewer_or_local(viewer).check_change(row, "run")
        with self._write() as db:
            db.execute("UPDATE runs SET shared = ? WHERE run_id = ?", [int(bool(shared)), run_id])

    def list_runs(self, *, db_name: str | None = None, pipeline: str | None = None,
                  verdict: str | None = None, error_type: str | None = None,
                  status: str | None = None, source: str | None = None,
                  outcome: str | None = None, accepted: bool | None = None,
                  search: str | None = None, owner: str | None = None,
                  limit: int | None = 200, offset: int = 0,
                  viewer: Viewer | None = None) -> list[dict]:
        """Newest runs first, each with its accepted answer's and latest annotation's columns
        (None when there is none).

        ``verdict=UNANNOTATED`` selects runs without any annotation; ``accepted`` True/False
        selects runs with/without an accepted answer; ``search`` is a case-insensitive substring
        looked up in the question, the final SQL, the accepted SQL and the notes. Only the runs
        ``viewer`` may see are listed; ``owner`` keeps those of one user.
        """
        where, params = [], []
        if owner is not None:  # "" is a filter too: what was made before sign-in
            where.append("r.owner = ?")
            params.append(owner)
        for column, value in (("r.db_name", db_name), ("r.pipeline", pipeline),
                              ("r.status", status), ("r.outcome", outcome),
                              ("r.source", source), ("a.error_type", error_type)):
            if value:
                where.append(f"{column} = ?")
                params.append(value)
        if accepted is not None:
            where.append("acc.id IS NOT NULL" if accepted else "acc.id IS NULL")
        if verdict == UNANNOTATED:
            where.append("a.id IS NULL")
        elif verdict:
            where.append("a.verdict = ?")
            params.append(verdict)
        if search:
            where.append("(instr(lower(r.question), lower(?))"
                         " OR instr(lower(COALESCE(r.final_sql, '')), lower(?))"
                         " OR instr(lower(COALESCE(acc.sql, '')), lower(?))"
                         " OR instr(lower(COALESCE(a.notes, '')), lower(?)))")
            params += [search] * 4
        return self._select_runs(" AND ".join(where) or "1", params, limit, offset,
                                 viewer=viewer)

    def _select_runs(self, where: str, params: list, limit: int | None,
                     offset: int = 0, *, viewer: Viewer | None = None) -> list[dict]:
        viewer = viewer_or_local(viewer)
        seen, seen_params = viewer.visible("r")
        seen_acc, acc_params = viewer.visible("acc")  # someone's private answer stays theirs
        where, params = f"({where}) AND {seen}", [*acc_params, *params, *seen_params]
        columns = ", ".join([f"r.{c}" for c in RUN_COLUMNS]
                            + [f"a.{c}" for c in ANNOTATION_COLUMNS if c != "annotated_at"]
                            + ["a.created_at AS annotated_at", "a.id AS annotation_id"]
                            + ["CASE WHEN acc.id IS NULL THEN 'no' ELSE 'yes' END AS accepted",
                               "acc.sql AS accepted_sql", "acc.author AS accepted_by",
                               "acc.created_at AS accepted_at", "acc.id AS accepted_id"])
        sql = (f"SELECT {columns} FROM runs AS r LEFT JOIN annotations AS a ON a.id = "
               f"(SELECT MAX(id) FROM annotations WHERE run_id = r.run_id) "
               f"LEFT JOIN accepted AS acc ON acc.id = r.accepted_id AND {seen_acc} "
               f"WHERE {where} ORDER BY r.started_at DESC, r.run_id LIMIT ? OFFSET ?")
        with self._lock:
            return list(self.db.query(sql, [*params, -1 if limit is None else limit, offset]))

    def distinct_values(self, column: str, *, viewer: Viewer | None = None) -> list[str]:
        """Values present in a filter column (db_name, pipeline, status, outcome, source,
        owner) of the runs ``viewer`` sees, for pickers."""
        if column not in FILTER_COLUMNS:
            raise ValueError(f"no filter column {column!r}")
        seen, params = viewer_or_local(viewer).visible()
        with self._lock:
            return [r[0] for r in self.db.execute(
                f"SELECT DISTINCT {column} FROM runs WHERE {column} IS NOT NULL AND {seen} "
                "ORDER BY 1", params)]

    def child_runs(self, run_id: str, *, viewer: Viewer | None = None) -> list[dict]:
        """The runs resumed from ``run_id`` (``parent_run_id``), oldest first: id and step."""
        seen, params = viewer_or_local(viewer).visible()
        with self._lock:
            rows = self.db.execute(
                "SELECT run_id, created_at, json_extract(run_json, '$.resumed_from') "
                f"FROM runs WHERE parent_run_id = ? AND {seen} ORDER BY started_at",
                [run_id, *params]).fetchall()
        return [{"run_id": r[0], "created_at": r[1], "resumed_from": r[2]} for r in rows]

    def delete_run(self, run_id: str, *, viewer: Viewer | None = None) -> bool:
        """Delete a run and its annotations (accepted answers are kept). True if it existed.
        Only its owner or an admin may (:class:`~agents.store.access.NotAllowed`)."""
        row = self.run_info(run_id, viewer=viewer)
        if row is None:
            return False
        viewer_or_local(viewer).check_change(row, "run")
        with self._write() as db:
            db.execute("DELETE FROM annotations WHERE run_id = ?", [run_id])
            return db.execute("DELETE FROM runs WHERE run_id = ?", [run_id]).rowcount > 0
