"""Accept one pipeline's answer on the Compare page, as the Ask page's Accept does.

The user picks a pipeline, may edit its final SQL, and accepts: the SQL must run (edited SQL is
run on the compared database through the safe execution layer first), and the answer is stored
against that pipeline's run by :func:`ui.widgets.accept.accept_answer` — the same record as an
answer accepted on the Ask page, listed in History and offered to the example bank.

It is a fragment: choosing a pipeline, editing or accepting reruns only this pane, never the
comparison above it.
"""

from __future__ import annotations

import streamlit as st

from agents.runs.compare import ComparisonResult, PipelineOutcome
from agents.rules.name_rewrite import execute_with_hint
from agents.db.sqltext import format_sql, same_sql

from ui import databases as ui_databases
from ui import state as ui_state
from ui.format import md_text, pipeline_label
from ui.widgets.accept import accept_answer, accepted_note, failure_text
from ui.widgets.result import result_view

CHOICE = "cmp_accept_choice"


def _title(outcome: PipelineOutcome) -> str:
    return pipeline_label(outcome.pipeline)


def _default(result: ComparisonResult, candidates: list[PipelineOutcome]) -> int:
    """The first pipeline of the largest group that agrees, else the first with SQL."""
    names = [o.pipeline for o in candidates]
    for group in sorted(result.groups, key=len, reverse=True):
        for name in group:
            if name in names:
                return names.index(name)
    return 0


def _preview(outcome: PipelineOutcome, db_key: str | None, sql: str) -> tuple[dict | None, str]:
    """The result of ``sql``: the pipeline's own when the SQL is unchanged, else run now."""
    if same_sql(outcome.final_sql, sql) or same_sql(format_sql(outcome.final_sql), sql):
        return outcome.result, ""
    db = ui_databases.resolve(db_key)
    if db is None:
        return None, ("The compared database is not available in this session any more, so "
                      "the edited SQL cannot be run.")
    limits = ui_state.exec_limits()
    ran = execute_with_hint(db, sql, timeout=limits.timeout, max_rows=limits.max_rows)
    return ran.preview(rows=limits.max_rows), "" if ran.ok else failure_text(ran)


@st.fragment
def accept_panel(result: ComparisonResult, db_key: str | None) -> None:
    """Pick a pipeline's SQL, edit it if need be, and accept it as the question's answer."""
    candidates = [o for o in result.outcomes if o.final_sql and o.run is not None]
    st.subheader("Accept an answer")
    if not candidates:
        st.caption("No pipeline produced SQL to accept.")
        return
    names = [o.pipeline for o in candidates]
    if st.session_state.get(CHOICE) not in names:
        st.session_state[CHOICE] = names[_default(result, candidates)]
    choice = st.radio("Accept the SQL of", names, key=CHOICE, horizontal=True,
                      format_func=lambda n: _title(result.outcome(n)))
    outcome = result.outcome(choice)
    sql_key = f"cmp_accept_sql_{outcome.run.run_id}"
    st.session_state.setdefault(sql_key, format_sql(outcome.final_sql))
    st.text_area("SQL to accept (you can edit it)", key=sql_key, height=140)
    if st.button("Accept", type="primary", key="cmp_accept",
                 help="Keep this question, SQL and result as an approved answer, stored with "
                      "this pipeline's run (as Accept on the Ask page does)."):
        sql = st.session_state[sql_key]
        preview, failure = _preview(outcome, db_key, sql) if sql.strip() else (None, "")
        level, message = ("error", failure) if failure else accept_answer(outcome.run, sql,
                                                                           preview)
        getattr(st, level)(md_text(message))
        if level == "success" and not same_sql(outcome.final_sql, sql):
            st.caption("The result of your edited SQL:")
            result_view(preview, key=f"cmp_accepted_{outcome.run.run_id}", chart=False)
    note = accepted_note(outcome.run.run_id)
    if note:
        st.caption(f"{note}: see History, where it is listed with the run and under Accepted "
                   "answers.")
