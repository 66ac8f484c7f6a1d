"""What the answer pane says about the answer before its table: the review the engine made
when the run ended (``Run.review``, :mod:`agents.answer.review`).

A question the database cannot answer gets its plain statement instead of SQL, without error
styling; a result whose shape does not fit the question is marked and, for "the top k", offered
the version that keeps k rows; an empty result says which condition emptied it; a ranking
shows the values it was decided on beside the rows.
"""

from __future__ import annotations

import streamlit as st

from agents.answer.shape import limited_to
from agents.core.events import Run
from agents.db.sqltext import format_sql
from ui.format import md_text


def review_of(run: Run) -> dict:
    return getattr(run, "review", None) or {}


def refusal(run: Run) -> bool:
    """Show the statement of a question the database cannot answer; True when the run has
    nothing else to show (no SQL was written). SQL written anyway stays editable below."""
    review = review_of(run)
    if review.get("answerable") is not False:
        return False
    st.info(md_text(review.get("statement") or "This database cannot answer the question."),
            icon=":material/info:")
    if run.final_sql:
        st.caption("The agents wrote SQL anyway; it is below, and you can edit and run it.")
    return not run.final_sql


def doubt(run: Run, sql_key: str) -> None:
    """The shape doubt, and the top-k repair where there is one."""
    review = review_of(run)
    text = review.get("doubt")
    if not text:
        return
    st.warning(md_text(f"This result may not answer the question: {text}."),
               icon=":material/help:")
    expected = review.get("expected") or {}
    repaired = limited_to(run.final_sql or "", expected.get("k") or 0) \
        if expected.get("kind") == "top" else None
    if repaired:
        def use() -> None:
            st.session_state[sql_key] = format_sql(repaired)

        st.button(f"Put the version keeping the top {expected['k']} in the SQL box",
                  key=f"shape_fix_{run.run_id}", on_click=use,
                  help="Replaces the SQL below; press 'Run edited SQL' to see its result.")
    else:
        st.caption("Edit the SQL below, or ask again saying what one row should be.")


def shown_result(run: Run, preview: dict, edited: bool) -> dict:
    """The result to show: the run's own rows with the values behind them where the review
    found some (never for edited SQL, whose rows the review did not see)."""
    behind = review_of(run).get("behind")
    if edited or not behind or not preview or not preview.get("ok"):
        return preview
    st.caption(md_text(f"Beside the answer's columns: {', '.join(behind['added'])}, the values "
                       "it was ranked or filtered by (the answer's SQL is unchanged)."))
    return {**preview, "columns": behind["columns"], "rows": behind["rows"]}


def empty_note(run: Run, preview: dict, edited: bool) -> None:
    """Why the run's own result is empty, and what the data holds instead."""
    empty = review_of(run).get("empty")
    if edited or not empty or not preview or preview.get("row_count"):
        return
    st.info(md_text(empty["text"]), icon=":material/search_off:")
