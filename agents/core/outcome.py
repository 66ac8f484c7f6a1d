"""A run's outcome in words: whether it finished, and whether its final SQL actually runs.

``Run.status`` says how the pipeline ended (done, failed, stopped), but a pipeline can finish
with SQL that SQLite refuses ("no such column ..."): calling that run "done" hides the one fact a
reviewer needs first; nor is an answer the database cannot give, a result whose shape does
not fit the question, or an empty one, a plain success. Every view -- Ask, History, the exports and the CLI -- labels a run with
:func:`outcome`, so they all tell "done, SQL runs" from "done, SQL fails" the same way.
"""

from __future__ import annotations

DONE_RUNS = "done, SQL runs"
DONE_FAILS = "done, SQL fails"
DONE_NO_SQL = "done, no SQL"
# the review of the answer (``Run.review``, :mod:`agents.answer.review`) tells these apart
NOT_ANSWERABLE = "not answerable from this database"
DONE_DOUBTFUL = "done, result doubtful"
DONE_EMPTY = "done, no rows"
OUTCOMES = (DONE_RUNS, DONE_DOUBTFUL, DONE_EMPTY, DONE_FAILS, DONE_NO_SQL, NOT_ANSWERABLE,
            "failed", "stopped")


def outcome(status: str | None, final_sql: str | None, result: dict | None,
            review: dict | None = None) -> str:
    """The label of a run that ended with ``status``, ``final_sql`` and its result preview;
    ``review`` says whether the database could answer, and what is doubtful about the result.
    """
    if status != "done":
        return status or "unknown"
    review = review or {}
    if review.get("answerable") is False:
        return NOT_ANSWERABLE
    if not final_sql:
        return DONE_NO_SQL
    if not (result and result.get("ok")):
        return DONE_FAILS
    if review.get("doubt"):
        return DONE_DOUBTFUL
    if result.get("row_count") == 0 and not result.get("truncated"):
        return DONE_EMPTY
    return DONE_RUNS


def run_outcome(run) -> str:
    """:func:`outcome` of a :class:`~agents.core.events.Run`."""
    return outcome(run.status, run.final_sql, run.result, getattr(run, "review", None))
