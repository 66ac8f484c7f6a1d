"""An edited step: what the next step saw, against what the model had produced.

A step whose state the user edited before re-running keeps the model's output (drawn below this
block as usual), but the run went on from the edit. This block comes first so nobody mistakes
the model's output for what the pipeline used: each changed key of the state is shown before and
after (SQL side by side, anything else as a line diff).
"""

from __future__ import annotations

import streamlit as st

from agents.core.events import Run, StepEvent
from agents.core.state_diff import change_lines, original_states, state_changes, value_text

from .parts import name, render_sql_change


def originals_for(run: Run) -> dict[int, dict | None] | None:
    """The model's own state of each edited step of ``run``, read from the store (None when no
    step was edited); a store that cannot be read leaves the edits uncompared."""
    if not any(e.edited for e in run.events):
        return None
    from ui import services as ui_services

    try:
        return original_states(run, ui_services.store().get_run)
    except Exception:
        return {e.index: None for e in run.events if e.edited}


def render_edit(event: StepEvent, original: dict | None) -> None:
    """The edit of ``event`` against ``original`` (the model's own state; None: unknown)."""
    st.markdown(":violet-badge[edited] **You edited this step's state: the next step saw the "
                "edited state, not the model's output shown below it.**")
    if original is None:
        st.caption("The run this one was resumed from is no longer stored, so the edit cannot "
                   "be compared with the model's original.")
        return
    changes = state_changes(original, event.data)
    if not changes:
        st.caption("The edit left the state as the model had it.")
        return
    for change in changes:
        st.markdown(f"{name(change.key)} — {change.kind}")
        if change.is_sql:
            render_sql_change(change.before, change.after)
            continue
        left, right = st.columns(2)
        with left:
            st.caption("model's output")
            st.code(value_text(change, change.before) or "—", language="json", wrap_lines=True)
        with right:
            st.caption("edited (what the next step saw)")
            st.code(value_text(change, change.after) or "—", language="json", wrap_lines=True)
        with st.expander("As a line diff"):
            st.code("\n".join(change_lines(change)), language="diff")
    st.caption("The model's original output:")
