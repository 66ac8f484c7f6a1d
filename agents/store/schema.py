"""The store's tables and their migrations, one function per schema version.

A store file records its schema version in ``meta``; opening it runs the migrations it lacks
(see :class:`~agents.store.connection.StoreConnection`), so a file written by an older studio
keeps working and one written by a newer studio is refused instead of being damaged.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Callable

import sqlite_utils

from agents.core.outcome import outcome

SCHEMA_VERSION = 5

# The filter columns of a run and of its latest annotation, as lists and exports show them.
RUN_COLUMNS = [
    "run_id", "created_at", "db_name", "db_label", "pipeline", "question", "evidence", "status",
    "outcome",
    "error", "final_sql", "model", "steps", "llm_calls", "prompt_tokens", "completion_tokens",
    "seconds", "result_rows", "parent_run_id", "source", "owner", "shared",
]
# The accepted answer a run is linked to (its latest), beside the model's own SQL.
ACCEPTED_COLUMNS = ["accepted", "accepted_sql", "accepted_by", "accepted_at"]
ANNOTATION_COLUMNS = [
    "verdict", "error_type", "faulty_step", "faulty_step_index", "corrected_sql", "notes",
    "author", "annotated_at",
]


def iso_utc(timestamp: float | None) -> str:
    """A stored timestamp: UTC, second precision, ``Z`` suffix (now when ``timestamp`` is None)."""
    when = (datetime.now(timezone.utc) if timestamp is None
            else datetime.fromtimestamp(timestamp, timezone.utc))
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso_utc(stamp: str) -> datetime | None:
    """A stored timestamp read back (UTC when it names no zone), or None for text that is not
    one."""
    try:
        when = datetime.fromisoformat(str(stamp).strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


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


def _review_v2(db: sqlite_utils.Database) -> None:
    """Runs get their outcome (does the final SQL run?) and a link to the accepted answer made
    from them, so lists and exports show both; older runs are filled in from their traces."""
    columns = db["runs"].columns_dict
    if "outcome" not in columns:
        db.execute("ALTER TABLE runs ADD COLUMN outcome TEXT")
    if "accepted_id" not in columns:
        db.execute("ALTER TABLE runs ADD COLUMN accepted_id INTEGER")
    for run_id, status, final_sql, run_json in db.execute(
            "SELECT run_id, status, final_sql, run_json FROM runs").fetchall():
        try:
            result = json.loads(run_json).get("result")
        except (TypeError, ValueError, AttributeError):
            result = None
        db.execute("UPDATE runs SET outcome = ? WHERE run_id = ?",
                   [outcome(status, final_sql, result if isinstance(result, dict) else None),
                    run_id])
    db.execute("UPDATE runs SET accepted_id = (SELECT MAX(a.id) FROM accepted AS a "
               "WHERE a.run_id = runs.run_id)")
    db["runs"].create_index(["outcome"], if_not_exists=True)


def _create_v3(db: sqlite_utils.Database) -> None:
    """The analyst's workspace: knowledge notes per database, conversation threads, saved
    databases. New tables only, so it applies after any version that does not create them."""
    db["knowledge"].create({
        "id": int, "db_name": str, "title": str, "text": str, "enabled": int, "source": str,
        "accepted_id": int, "created_at": str, "updated_at": str,
    }, pk="id", not_null=["db_name", "text"], if_not_exists=True)
    db["knowledge"].create_index(["db_name"], if_not_exists=True)
    db["thread_runs"].create({
        "run_id": str, "thread_id": str, "previous_run_id": str, "position": int,
        "created_at": str,
    }, pk="run_id", not_null=["thread_id"], if_not_exists=True)
    db["thread_runs"].create_index(["thread_id"], if_not_exists=True)
    db["saved_databases"].create({
        "name": str, "kind": str, "path": str, "file_name": str, "size_bytes": int,
        "added_at": str,
    }, pk="name", not_null=["kind", "path"], if_not_exists=True)


OWNED_TABLES = ("runs", "accepted", "knowledge", "saved_databases")


def _owners_v4(db: sqlite_utils.Database) -> None:
    """Team mode: each run, accepted answer, note and saved database gets its owner (empty for
    what was made before, which everyone sees and only admins change) and whether the owner
    shares it with the team (see :mod:`agents.store.access`)."""
    for table in OWNED_TABLES:
        columns = db[table].columns_dict
        if "owner" not in columns:
            db.execute(f"ALTER TABLE {table} ADD COLUMN owner TEXT NOT NULL DEFAULT ''")
        if "shared" not in columns:
            db.execute(f"ALTER TABLE {table} ADD COLUMN shared INTEGER NOT NULL DEFAULT 1")
        db[table].create_index(["owner"], if_not_exists=True)


def _preferences_v5(db: sqlite_utils.Database) -> None:
    """Each user's settings (:mod:`agents.store.preferences`), one row per user and key, so a
    reload or a restart shows the Settings page as the user left it. A new table only."""
    db["user_preferences"].create({
        "user": str, "key": str, "value_json": str, "updated_at": str,
    }, pk=("user", "key"), not_null=["value_json"], if_not_exists=True)


# version -> the step that brings a file from the previous version to it (every version has one;
# versions 2 to 5 are safe on a file that already has what they add).
MIGRATIONS: dict[int, Callable[[sqlite_utils.Database], None]] = {
    1: _create_v1, 2: _review_v2, 3: _create_v3, 4: _owners_v4, 5: _preferences_v5}
