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
from .connection import StoreConnection
from .schema import ANNOTATION_COLUMNS, RUN_COLUMNS, iso_utc
from .taxonomy import SOURCES, UNANNOTATED

FILTER_COLUMNS = ("db_name", "pipeline", "status", "outcome", "source", "model")


class RunsPart(StoreConnection):
    """The run methods of :class:`~agents.store.Store`."""

    def save_run(self, run: Run, *, source: str = "app", db_label: str | None = None) -> str:
        """Insert or update ``run`` (keyed by ``run.run_id``) and return its id."""
        if source not in SOURCES:
            raise ValueError(f"source must be one of {', '.join(SOURCES)}; got {source!r}")
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
            "saved_at": iso_utc(None),
            "run_json": json.dumps(run.to_dict(), default=str, ensure_ascii=False),
        }
        with self._write() as db:
            db["runs"].upsert(record, pk="run_id")
        return run.run_id

    def get_run(self, run_id: str) -> Run | None:
        """The stored run rebuilt as a :class:`Run` (for replay), or None if there is none."""
        with self._lock:
            row = self.db.execute("SELECT run_json FROM runs WHERE run_id = ?", [run_id]).fetchone()
        return load_run(json.loads(row[0])) if row else None

    def run_info(self, run_id: str) -> dict | None:
        """The filter columns of one run plus its latest annotation (no trace)."""
        rows = self._select_runs("r.run_id = ?", [run_id], limit=1)
        return rows[0] if rows else None

    def list_runs(self, *, db_name: str | None = None, pipeline: str | None = None,
                  verdict: str | None = None, error_type: str | None = None,
                  status: str | None = None, source: str | None = None,
                  outcome: str | None = None, accepted: bool | None = None,
                  search: str | None = None, limit: int | None = 200,
                  offset: int = 0) -> list[dict]:
        """Newest runs first, each with its accepted answer's and latest annotation's columns
        (None when there is none).

        ``verdict=UNANNOTATED`` selects runs without any annotation; ``accepted`` True/False
        selects runs with/without an accepted answer; ``search`` is a case-insensitive substring
        looked up in the question, the final SQL, the accepted SQL and the notes.
        """
        where, params = [], []
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
        return self._select_runs(" AND ".join(where) or "1", params, limit, offset)

    def _select_runs(self, where: str, params: list, limit: int | None,
                     offset: int = 0) -> list[dict]:
        columns = ", ".join([f"r.{c}" for c in RUN_COLUMNS]
                            + [f"a.{c}" for c in ANNOTATION_COLUMNS if c != "annotated_at"]
                            + ["a.created_at AS annotated_at", "a.id AS annotation_id"]
                            + ["CASE WHEN acc.id IS NULL THEN 'no' ELSE 'yes' END AS accepted",
                               "acc.sql AS accepted_sql", "acc.author AS accepted_by",
                               "acc.created_at AS accepted_at", "acc.id AS accepted_id"])
        sql = (f"SELECT {columns} FROM runs AS r LEFT JOIN annotations AS a ON a.id = "
               f"(SELECT MAX(id) FROM annotations WHERE run_id = r.run_id) "
               f"LEFT JOIN accepted AS acc ON acc.id = r.accepted_id "
               f"WHERE {where} ORDER BY r.started_at DESC, r.run_id LIMIT ? OFFSET ?")
        with self._lock:
            return list(self.db.query(sql, [*params, -1 if limit is None else limit, offset]))

    def distinct_values(self, column: str) -> list[str]:
        """Values present in a filter column (db_name, pipeline, status, outcome, source), for
        pickers."""
        if column not in FILTER_COLUMNS:
            raise ValueError(f"no filter column {column!r}")
        with self._lock:
            return [r[0] for r in self.db.execute(
                f"SELECT DISTINCT {column} FROM runs WHERE {column} IS NOT NULL ORDER BY 1")]

    def child_runs(self, run_id: str) -> list[dict]:
        """The runs resumed from ``run_id`` (``parent_run_id``), oldest first: id and step."""
        with self._lock:
            rows = self.db.execute(
                "SELECT run_id, created_at, json_extract(run_json, '$.resumed_from') "
                "FROM runs WHERE parent_run_id = ? ORDER BY started_at", [run_id]).fetchall()
        return [{"run_id": r[0], "created_at": r[1], "resumed_from": r[2]} for r in rows]

    def delete_run(self, run_id: str) -> bool:
        """Delete a run and its annotations (accepted answers are kept). True if it existed."""
        with self._write() as db:
            db.execute("DELETE FROM annotations WHERE run_id = ?", [run_id])
            return db.execute("DELETE FROM runs WHERE run_id = ?", [run_id]).rowcount > 0
