"""Follow-up questions: what the next run is told about the previous question of a conversation.

A follow-up ("and only for 2024?", "now per country") makes sense only with the question before
it, so the next run gets that question, its final SQL and a short summary of its result in its
evidence (see :mod:`agents.runs.run_context`), plus the previous answer in words when that run had
its result summarized (:mod:`agents.runs.result_summary`), the same way in every pipeline. Where
the user accepted an answer from that run (corrected or not), the accepted SQL and its result
are what the next run is told. Conversations are
threads: the first run's id names the thread, and each follow-up joins it.
"""

from __future__ import annotations

from agents.core.events import Run
from agents.db.sqltext import same_sql
from agents.runs.knowledge import notes_for
from agents.runs.result_summary import summary_text
from agents.runs.run_context import FollowUp, RunContext, one_line

SUMMARY_ROWS = 3        # rows quoted in a result summary
SUMMARY_CELL_CHARS = 40
SUMMARY_CHARS = 400
ANSWER_CHARS = 600      # the previous run's summary in words, as the follow-up quotes it


class FollowUpError(ValueError):
    """The previous run cannot be followed up (no final SQL); the message says why."""


def _cell(value) -> str:
    text = "NULL" if value is None else one_line(str(value))
    return text if len(text) <= SUMMARY_CELL_CHARS else text[:SUMMARY_CELL_CHARS - 1] + "…"


def summarize_result(preview: dict | None) -> str:
    """A short plain summary of a result preview: size, columns and the first rows."""
    if not preview:
        return "not executed"
    if not preview.get("ok"):
        return f"the query failed: {one_line(preview.get('error') or 'unknown error')}"
    rows = preview.get("rows") or []
    count = preview.get("row_count", len(rows))
    more = " or more" if preview.get("truncated") else ""
    parts = [f"{count}{more} row(s)"]
    columns = preview.get("columns") or []
    if columns:
        parts.append("columns " + ", ".join(_cell(c) for c in columns))
    if rows:
        quoted = "; ".join(" | ".join(_cell(v) for v in row) for row in rows[:SUMMARY_ROWS])
        parts.append(("first rows: " if len(rows) > 1 else "row: ") + quoted)
    text = "; ".join(parts)
    return text if len(text) <= SUMMARY_CHARS else text[:SUMMARY_CHARS - 1] + "…"


def follow_up_of(previous: Run, accepted: dict | None = None) -> FollowUp:
    """What a follow-up of ``previous`` is told; raises :class:`FollowUpError` when the previous
    run has no final SQL to build on. ``accepted``, the answer the user accepted from that run
    (``Store.accepted_of_run``: its ``sql`` and ``result_preview``), is what the follow-up
    builds on instead of the run's own final SQL: an analyst who corrected the SQL and accepted
    it means the corrected answer when asking "and only for 2024?"."""
    sql = ((accepted or {}).get("sql") or "").strip()
    if not sql and not (previous.final_sql or "").strip():
        raise FollowUpError("the previous question has no final SQL to follow up on; ask it "
                            "again or start a new question")
    as_written = not sql or same_sql(sql, previous.final_sql or "")
    # the words described the model's result: not the answer of other SQL the user accepted
    answer = one_line(summary_text(previous)) if as_written else ""
    if len(answer) > ANSWER_CHARS:
        answer = answer[:ANSWER_CHARS - 1] + "…"
    if sql:
        preview = accepted.get("result_preview")
        if preview is None and as_written:
            preview = previous.result  # accepted as the run wrote it: the run's own result
        return FollowUp(run_id=previous.run_id, question=previous.question, sql=sql,
                        summary=summarize_result(preview) if preview is not None
                        else "not recorded with the accepted answer",
                        answer=answer, accepted=True)
    return FollowUp(run_id=previous.run_id, question=previous.question,
                    sql=previous.final_sql, summary=summarize_result(previous.result),
                    answer=answer)


def thread_id_of(previous: Run) -> str:
    """The thread a follow-up of ``previous`` joins: the previous run's thread, or a new one
    named after the previous run when it was the conversation's first question."""
    return (previous.context or {}).get("thread_id") or previous.run_id


def run_context(store, db_name: str, hint: str = "", *, previous: Run | None = None,
                knowledge: bool = True):
    """The :class:`~agents.runs.run_context.RunContext` of a new run on ``db_name``: the hint, the
    database's enabled knowledge notes (unless ``knowledge`` is off) and, when ``previous`` is
    given, the follow-up of that run. Raises :class:`FollowUpError` for a previous run that
    cannot be followed up."""
    notes, left_out = notes_for(store, db_name) if knowledge and store is not None else ([], 0)
    context = RunContext(hint=hint or "", notes=notes, left_out=left_out)
    if previous is not None:
        accepted = store.accepted_of_run(previous.run_id) if store is not None else None
        context.follow_up = follow_up_of(previous, accepted)
        context.thread_id = thread_id_of(previous)
    return context
