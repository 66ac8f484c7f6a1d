"""A run's family on the History page: the run it was resumed from, the runs resumed from it,
and the original beside the resumed run.

A re-run from an edited step is a new run linked by ``parent_run_id``; a reviewer wants to jump
between the two and compare them step by step, so each link is a button that opens that run, and
a toggle draws both traces in two columns (edited steps with their diff).
"""

from __future__ import annotations

import streamlit as st

from agents.core.events import Run
from agents.core.outcome import run_outcome
from agents.db.sqltext import format_sql

from ui import trace as ui_trace
from ui.format import md_text
from ui.trace.edits import originals_for

OPEN_KEY = "hist_open"


def _open(run_id: str) -> None:
    st.session_state[OPEN_KEY] = run_id


def family_links(store, run: Run) -> Run | None:
    """Buttons to the parent and child runs; returns the parent run when it is stored."""
    parent = store.get_run(run.parent_run_id) if run.parent_run_id else None
    if run.parent_run_id:
        step = (run.resumed_from or 0) + 1
        if parent is None:
            st.caption(f"Resumed from run {run.parent_run_id} at step {step}, which is no "
                       "longer stored.")
        else:
            st.button(f"Open the original run {run.parent_run_id} (this run resumed it at step "
                      f"{step})", key=f"open_parent_{run.run_id}", on_click=_open,
                      args=(run.parent_run_id,))
    for child in store.child_runs(run.run_id):
        st.button(f"Open run {child['run_id']}, resumed from this one at step "
                  f"{(child['resumed_from'] or 0) + 1}", key=f"open_child_{child['run_id']}",
                  on_click=_open, args=(child["run_id"],))
    return parent


def side_by_side(parent: Run, run: Run) -> None:
    """The original run (left) and the resumed run (right), trace and final SQL each."""
    left, right = st.columns(2, gap="medium")
    for column, shown, title in ((left, parent, "Original run"), (right, run, "Resumed run")):
        with column:
            st.markdown(f"**{title}** {shown.run_id} · {run_outcome(shown)}")
            ui_trace.render_trace(shown.events, originals=originals_for(shown))
            if shown.final_sql:
                st.code(format_sql(shown.final_sql), language="sql", wrap_lines=True)
            result = shown.result or {}
            if result.get("ok"):
                st.caption(f"{result.get('row_count', 0):,} row(s)")
            elif result:
                st.caption(md_text(f"The SQL fails: {result.get('error')}"))
