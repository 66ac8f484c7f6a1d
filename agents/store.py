"""The persistent run store: every run with its full trace, annotations and accepted answers.

The History page, the example bank and the evaluation harness all read and write here, so a run
saved from the app, the CLI or an evaluation can later be replayed (rebuilt with
:meth:`Run.from_dict`, no model call), annotated with an error type from the papers' error
analyses, or exported. The file lives in ``studio_home()/studio.db`` and is opened in WAL mode
with a busy timeout and ``BEGIN IMMEDIATE`` writes, so several browser sessions or processes can
write at once without losing anything. One :class:`Store` may be shared between threads.
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator

import sqlite_utils

from .events import Run
from .paths import studio_home

SCHEMA_VERSION = 1
BUSY_TIMEOUT_S = 5.0

SOURCES = ("app", "cli", "eval")
VERDICTS = ("correct", "incorrect", "unsure")
UNANNOTATED = "unannotated"  # a ``verdict`` filter value: runs nobody has judged yet


@dataclass(frozen=True)
class ErrorType:
    key: str
    label: str
    description: str


# Drawn from the error analyses of MAC-SQL, DEA-SQL and R3 (and DIN-SQL, which they build on).
ERROR_TYPES: dict[str, ErrorType] = {e.key: e for e in [
    ErrorType("schema_linking", "Schema linking",
              "Wrong table or column chosen, or a column taken from the wrong table."),
    ErrorType("join", "Join",
              "Missing, extra or wrong join, or an invented join condition."),
    ErrorType("aggregation_grouping", "Aggregation / grouping",
              "Wrong aggregate, GROUP BY, HAVING or ORDER BY (e.g. extremum questions)."),
    ErrorType("nesting_set_operation", "Nesting / set operation",
              "Subquery, IN / NOT IN, EXCEPT, UNION or INTERSECT used wrongly or missing."),
    ErrorType("value_mismatch", "Database value mismatch",
              "A filter value does not match how the value is stored (spelling, case, format)."),
    ErrorType("extra_missing_columns", "Extra / missing columns",
              "Selects columns the question did not ask for, or leaves requested ones out."),
    ErrorType("logic", "Logic",
              "The query runs but its reasoning is wrong (conditions, arithmetic, assumptions)."),
    ErrorType("question_ambiguity", "Question ambiguity",
              "The question allows several readings; the SQL answers a different one."),
    ErrorType("syntax_execution", "Syntax / execution",
              "The SQL does not run: syntax error, unknown function, other dialect, timeout."),
    ErrorType("other", "Other", "Anything the other types do not describe."),
]}

RUN_COLUMNS = [
    "run_id", "created_at", "db_name", "db_label", "pipeline", "question", "evidence", "status",
    "error", "final_sql", "model", "steps", "llm_calls", "prompt_tokens", "completion_tokens",
    "seconds", "result_rows", "parent_run_id", "source",
]
ANNOTATION_COLUMNS = [
    "verdict", "error_type", "faulty_step", "faulty_step_index", "corrected_sql", "notes",
    "author", "annotated_at",
]
EXPORT_COLUMNS = RUN_COLUMNS + ANNOTATION_COLUMNS


class StoreError(Exception):
    """The store file cannot be used (not a database, corrupt, from a newer version)."""


def default_path() -> Path:
    return studio_home() / "studio.db"


class Store:
    """Runs, annotations and accepted answers in one SQLite file (see the module docstring)."""

    def __init__(self, path: Path | str | None = None):
        self.path = Path(path) if path is not None else default_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, check_same_thread=False)
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
            raise StoreError(f"The run store {self.path} cannot be opened: {exc}. "
                             "Move the file away to start a fresh store.") from exc

    # -- lifecycle --------------------------------------------------------------------------

    def close(self) -> None:
        with self._lock:
            self.db.close()

    def __enter__(self) -> "Store":
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
                                 f"studio (schema {version}, this one knows {SCHEMA_VERSION}).")
            for target in range(version + 1, SCHEMA_VERSION + 1):
                _MIGRATIONS[target](db)
            db["meta"].upsert({"key": "schema_version", "value": str(SCHEMA_VERSION)}, pk="key")

    # -- runs ---------------------------------------------------------------------------------

    def save_run(self, run: Run, *, source: str = "app", db_label: str | None = None) -> str:
        """Insert or update ``run`` (keyed by ``run.run_id``) and return its id."""
        if source not in SOURCES:
            raise ValueError(f"source must be one of {', '.join(SOURCES)}; got {source!r}")
        result = run.result or {}
        record = {
            "run_id": run.run_id,
            "created_at": _iso(run.started_at),
            "started_at": run.started_at,
            "db_name": run.db_name,
            "db_label": db_label or run.db_name,
            "pipeline": run.pipeline,
            "question": run.question,
            "evidence": run.evidence or "",
            "status": run.status,
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
            "saved_at": _iso(None),
            "run_json": json.dumps(run.to_dict(), default=str, ensure_ascii=False),
        }
        with self._write() as db:
            db["runs"].upsert(record, pk="run_id")
        return run.run_id

    def get_run(self, run_id: str) -> Run | None:
        """The stored run rebuilt as a :class:`Run` (for replay), or None if there is none."""
        with self._lock:
            row = self.db.execute("SELECT run_json FROM runs WHERE run_id = ?", [run_id]).fetchone()
        return Run.from_dict(json.loads(row[0])) if row else None

    def run_info(self, run_id: str) -> dict | None:
        """The filter columns of one run plus its latest annotation (no trace)."""
        rows = self._select_runs("r.run_id = ?", [run_id], limit=1)
        return rows[0] if rows else None

    def list_runs(self, *, db_name: str | None = None, pipeline: str | None = None,
                  verdict: str | None = None, error_type: str | None = None,
                  status: str | None = None, source: str | None = None,
                  search: str | None = None, limit: int | None = 200,
                  offset: int = 0) -> list[dict]:
        """Newest runs first, each with its latest annotation's columns (None when unannotated).

        ``verdict=UNANNOTATED`` selects runs without any annotation; ``search`` is a
        case-insensitive substring looked up in the question, the final SQL and the notes.
        """
        where, params = [], []
        for column, value in (("r.db_name", db_name), ("r.pipeline", pipeline),
                              ("r.status", status), ("r.source", source),
                              ("a.error_type", error_type)):
            if value:
                where.append(f"{column} = ?")
                params.append(value)
        if verdict == UNANNOTATED:
            where.append("a.id IS NULL")
        elif verdict:
            where.append("a.verdict = ?")
            params.append(verdict)
        if search:
            where.append("(instr(lower(r.question), lower(?))"
                         " OR instr(lower(COALESCE(r.final_sql, '')), lower(?))"
                         " OR instr(lower(COALESCE(a.notes, '')), lower(?)))")
            params += [search] * 3
        return self._select_runs(" AND ".join(where) or "1", params, limit, offset)

    def _select_runs(self, where: str, params: list, limit: int | None,
                     offset: int = 0) -> list[dict]:
        columns = ", ".join([f"r.{c}" for c in RUN_COLUMNS]
                            + [f"a.{c}" for c in ANNOTATION_COLUMNS if c != "annotated_at"]
                            + ["a.created_at AS annotated_at", "a.id AS annotation_id"])
        sql = (f"SELECT {columns} FROM runs AS r LEFT JOIN annotations AS a ON a.id = "
               f"(SELECT MAX(id) FROM annotations WHERE run_id = r.run_id) "
               f"WHERE {where} ORDER BY r.started_at DESC, r.run_id LIMIT ? OFFSET ?")
        with self._lock:
            return list(self.db.query(sql, [*params, -1 if limit is None else limit, offset]))

    def distinct_values(self, column: str) -> list[str]:
        """Values present in a filter column (db_name, pipeline, status, source), for pickers."""
        if column not in ("db_name", "pipeline", "status", "source", "model"):
            raise ValueError(f"no filter column {column!r}")
        with self._lock:
            return [r[0] for r in self.db.execute(
                f"SELECT DISTINCT {column} FROM runs WHERE {column} IS NOT NULL ORDER BY 1")]

    def delete_run(self, run_id: str) -> bool:
        """Delete a run and its annotations (accepted answers are kept). True if it existed."""
        with self._write() as db:
            db.execute("DELETE FROM annotations WHERE run_id = ?", [run_id])
            return db.execute("DELETE FROM runs WHERE run_id = ?", [run_id]).rowcount > 0

    # -- annotations ----------------------------------------------------------------------------

    def annotate(self, run_id: str, verdict: str, error_type: str | None = None,
                 faulty_step: str | int | None = None, corrected_sql: str | None = None,
                 notes: str = "", author: str | None = None) -> int:
        """Record a judgement of a run; earlier ones are kept as history, the latest is shown.

        ``faulty_step`` is a step name or index of the run; it is stored as both.
        """
        if verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {', '.join(VERDICTS)}; got {verdict!r}")
        error_type = error_type or None
        if error_type is not None and error_type not in ERROR_TYPES:
            raise ValueError(f"unknown error type {error_type!r}; choose one of "
                             f"{', '.join(ERROR_TYPES)}")
        if verdict == "correct" and error_type is not None:
            raise ValueError("a run judged correct cannot have an error type")
        with self._write() as db:
            run = self.get_run(run_id)
            if run is None:
                raise ValueError(f"there is no stored run with id {run_id!r}")
            step_name, step_index = _resolve_step(run, faulty_step)
            return db["annotations"].insert({
                "run_id": run_id, "verdict": verdict, "error_type": error_type,
                "faulty_step": step_name, "faulty_step_index": step_index,
                "corrected_sql": (corrected_sql or "").strip() or None, "notes": notes or "",
                "author": author, "created_at": _iso(None),
            }).last_pk

    def get_annotation(self, run_id: str) -> dict | None:
        """The latest annotation of a run, or None."""
        history = self.annotation_history(run_id)
        return history[-1] if history else None

    def annotation_history(self, run_id: str) -> list[dict]:
        """Every annotation of a run, oldest first."""
        with self._lock:
            return list(self.db.query(
                "SELECT * FROM annotations WHERE run_id = ? ORDER BY id", [run_id]))

    # -- accepted answers -----------------------------------------------------------------------

    def accept(self, run_id: str | None, question: str, sql: str, db_name: str,
               result_preview: dict | None = None, author: str | None = None) -> int:
        """Keep a (question, SQL, result) pair the user approved; the same pair is stored once."""
        question, sql = (question or "").strip(), (sql or "").strip()
        if not question or not sql or not db_name:
            raise ValueError("an accepted answer needs a question, its SQL and the database name")
        with self._write() as db:
            row = db.execute(
                "SELECT id FROM accepted WHERE db_name = ? AND question = ? AND sql = ?",
                [db_name, question, sql]).fetchone()
            if row:
                return row[0]
            return db["accepted"].insert({
                "run_id": run_id, "db_name": db_name, "question": question, "sql": sql,
                "result_json": json.dumps(result_preview, default=str) if result_preview else None,
                "author": author, "created_at": _iso(None),
            }).last_pk

    def list_accepted(self, db_name: str | None = None) -> list[dict]:
        """Accepted answers, newest first, with ``result_preview`` decoded."""
        where = " WHERE db_name = ?" if db_name else ""
        sql = f"SELECT * FROM accepted{where} ORDER BY id DESC"
        with self._lock:
            rows = list(self.db.query(sql, [db_name] if db_name else []))
        for row in rows:
            raw = row.pop("result_json")
            row["result_preview"] = json.loads(raw) if raw else None
        return rows

    def remove_accepted(self, accepted_id: int) -> bool:
        with self._write() as db:
            return db.execute("DELETE FROM accepted WHERE id = ?", [accepted_id]).rowcount > 0

    # -- export ---------------------------------------------------------------------------------

    def export_runs(self, rows: Iterable[dict] | None = None, fmt: str = "csv",
                    **filters: Any) -> str:
        """Runs as CSV (one row per run, latest annotation columns) or JSONL (full run and
        annotation per line).

        ``rows`` are rows from :meth:`list_runs` (e.g. what a page shows); without them the runs
        matching ``filters`` (the :meth:`list_runs` keywords) are exported, all of them by default.
        """
        if fmt not in ("csv", "jsonl"):
            raise ValueError(f"export format must be 'csv' or 'jsonl'; got {fmt!r}")
        if rows is None:
            rows = self.list_runs(**{"limit": None, **filters})
        rows = list(rows)
        out = io.StringIO()
        if fmt == "csv":
            writer = csv.DictWriter(out, fieldnames=EXPORT_COLUMNS, extrasaction="ignore",
                                    lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
            return out.getvalue()
        for row in rows:
            run = self.get_run(row["run_id"])
            if run is None:  # deleted meanwhile
                continue
            out.write(json.dumps({
                "run": run.to_dict(),
                "source": row.get("source"),
                "db_label": row.get("db_label"),
                "annotation": self.get_annotation(row["run_id"]),
            }, default=str, ensure_ascii=False) + "\n")
        return out.getvalue()


def _resolve_step(run: Run, step: str | int | None) -> tuple[str | None, int | None]:
    """Map a step name or index to (name, index), checking it exists in the run."""
    if step is None or step == "":
        return None, None
    names = [e.step for e in run.events]
    if isinstance(step, int) or (isinstance(step, str) and step.isdigit()):
        index = int(step)
        if not 0 <= index < len(names):
            raise ValueError(
                f"faulty step {index} does not exist; this run has steps 0-{len(names) - 1}"
                if names else "this run has no steps to blame")
        return names[index], index
    if step not in names:
        raise ValueError(f"faulty step {step!r} is not a step of this run; its steps are "
                         f"{', '.join(dict.fromkeys(names)) or 'none'}")
    index = len(names) - 1 - names[::-1].index(step)  # a repeated step: blame its last attempt
    return step, index


def _iso(timestamp: float | None) -> str:
    when = (datetime.now(timezone.utc) if timestamp is None
            else datetime.fromtimestamp(timestamp, timezone.utc))
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _create_v1(db: sqlite_utils.Database) -> None:
    db["runs"].create({
        "run_id": str, "created_at": str, "started_at": float, "db_name": str, "db_label": str,
        "pipeline": str, "question": str, "evidence": str, "status": str, "error": str,
        "final_sql": str, "model": str, "steps": int, "llm_calls": int, "prompt_tokens": int,
        "completion_tokens": int, "seconds": float, "result_rows": int, "parent_run_id": str,
        "source": str, "saved_at": str, "run_json": str,
    }, pk="run_id", not_null=["question", "db_name", "pipeline", "run_json"])
    db["runs"].create_index(["started_at"])
    db["runs"].create_index(["db_name", "pipeline"])
    db["annotations"].create({
        "id": int, "run_id": str, "verdict": str, "error_type": str, "faulty_step": str,
        "faulty_step_index": int, "corrected_sql": str, "notes": str, "author": str,
        "created_at": str,
    }, pk="id", foreign_keys=[("run_id", "runs", "run_id")], not_null=["run_id", "verdict"])
    db["annotations"].create_index(["run_id"])
    db["accepted"].create({
        "id": int, "run_id": str, "db_name": str, "question": str, "sql": str,
        "result_json": str, "author": str, "created_at": str,
    }, pk="id", not_null=["db_name", "question", "sql"])
    db["accepted"].create_index(["db_name"])


_MIGRATIONS = {1: _create_v1}
