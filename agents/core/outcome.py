"""A run's outcome in words: whether it finished, and whether its final SQL actually runs.

``Run.status`` says how the pipeline ended (done, failed, stopped), but a pipeline can finish
with SQL that SQLite refuses ("no such column ..."): calling that run "done" hides the one fact a
reviewer needs first. Every view -- Ask, History, the exports and the CLI -- labels a run with
:func:`outcome`, so they all tell "done, SQL runs" from "done, SQL fails" the same way.
"""

from __future__ import annotations

DONE_RUNS = "done, SQL runs"
DONE_FAILS = "done, SQL fails"
DONE_NO_SQL = "done, no SQL"
OUTCOMES = (DONE_RUNS, DONE_FAILS, DONE_NO_SQL, "failed", "stopped")


def outcome(status: str | None, final_sql: str | None, result: dict | None) -> str:
    """The label of a run that ended with ``status``, ``final_sql`` and its result preview."""
    if status != "done":
        return status or "unknown"
    if not final_sql:
        return DONE_NO_SQL
    return DONE_RUNS if result and result.get("ok") else DONE_FAILS


def run_outcome(run) -> str:
    """:func:`outcome` of a :class:`~agents.core.events.Run`."""
    return outcome(run.status, run.final_sql, run.result)
