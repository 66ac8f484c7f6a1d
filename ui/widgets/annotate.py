"""The annotation form of a stored run: verdict, error type, the step at fault, a corrected SQL.

Reopening an annotated run fills every field with what was saved -- the step at fault too -- so
saving again changes only what the user changed. A new annotation starts with no verdict: a run
nobody has looked at must not be saved as "correct" by one click. Steps are named as the trace
names them, by number and agent. A corrected SQL is run (read-only) before it is saved; a name
error in it gets the same hint an agent's repair step gets.
"""

from __future__ import annotations

import streamlit as st

from agents.rules.name_rewrite import execute_with_hint
from agents.core.events import Run, StepEvent
from agents.store import ERROR_TYPES, VERDICTS

from ui import databases as ui_databases
from ui import state as ui_state
from ui.format import md_text
from ui.widgets.reviewer import name_input, reviewer_name

NOTICE = "hist_notice"


def step_option(event: StepEvent) -> str:
    """A step as the picker lists it: ``step 2 · Decomposer — Decompose the question``."""
    label = f"step {event.index + 1} · {event.agent}"
    return f"{label} — {event.title}" if event.title and event.title != event.agent else label


def saved_step(run: Run, latest: dict | None) -> int | None:
    """The step index the latest annotation blamed, if it is still a step of the run."""
    index = (latest or {}).get("faulty_step_index")
    return index if isinstance(index, int) and 0 <= index < len(run.events) else None


def annotation_form(store, run: Run, latest: dict | None) -> None:
    st.subheader("Annotate")
    steps = [None, *range(len(run.events))]
    error_keys = [None, *ERROR_TYPES]
    blamed = saved_step(run, latest)
    with st.form(f"annotate_{run.run_id}"):
        verdict = st.radio("Verdict", list(VERDICTS), horizontal=True,
                           index=VERDICTS.index(latest["verdict"]) if latest
                           and latest.get("verdict") in VERDICTS else None)
        error_type = st.selectbox(
            "Error type", error_keys,
            index=error_keys.index(latest["error_type"]) if latest and latest.get("error_type")
            in ERROR_TYPES else 0,
            format_func=lambda k: "(none)" if k is None
            else f"{ERROR_TYPES[k].label} — {ERROR_TYPES[k].description}")
        step = st.selectbox("Step at fault", steps,
                            index=0 if blamed is None else blamed + 1,
                            format_func=lambda i: "(none)" if i is None
                            else step_option(run.events[i]))
        corrected = st.text_area("Corrected SQL (optional)",
                                 value=(latest or {}).get("corrected_sql") or "", height=120)
        notes = st.text_area("Notes", value=(latest or {}).get("notes") or "", height=80)
        name_input()
        submitted = st.form_submit_button("Save annotation", type="primary")
    if submitted:
        _save(store, run, verdict, error_type, step, corrected, notes)


def _save(store, run: Run, verdict, error_type, step, corrected: str, notes: str) -> None:
    if verdict is None:
        st.error("Choose a verdict (correct, incorrect or unsure) before saving.")
        return
    if verdict == "correct" and error_type:
        st.error("A run judged correct has no error type: pick '(none)' or another verdict.")
        return
    info = None
    if corrected.strip():
        ok, info, hint = check_sql(run, corrected)
        if not ok:
            st.error(md_text(info))
            if hint:
                st.caption(md_text(f"Hint: {hint}"))
            return
    try:
        store.annotate(run.run_id, verdict, error_type=error_type, faulty_step=step,
                       corrected_sql=corrected.strip() or None, notes=notes,
                       author=reviewer_name())
    except ValueError as exc:
        st.error(f"Not saved: {md_text(exc)}")
        return
    st.session_state[NOTICE] = f"Annotation saved. {info or ''}".strip()
    st.rerun()


def check_sql(run: Run, sql: str) -> tuple[bool, str, str | None]:
    """Execute a corrected SQL safely against the run's database, when this session has it:
    (runs, message, name hint)."""
    key = ui_databases.key_for_run(run.db_name)
    db = ui_databases.resolve(key) if key else None
    if db is None:
        return True, (f"The database '{run.db_name}' is not available in this session (upload it "
                      "on the Ask page to check), so the corrected SQL was saved unchecked."), None
    limits = ui_state.exec_limits()
    result = execute_with_hint(db, sql, timeout=limits.timeout, max_rows=limits.max_rows)
    if not result.ok:
        reason = f"Refused: {result.error}" if result.error_class == "UnsafeSQL" else \
            f"The corrected SQL does not run ({result.error_class or 'error'}): {result.error}"
        return False, reason, result.hint
    return True, f"The corrected SQL runs on {run.db_name}: {result.row_count:,} row(s).", None
