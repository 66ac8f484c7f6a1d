"""History & annotation: every saved run, replayed from the store, judged and exported."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from agents.store import ERROR_TYPES, UNANNOTATED, VERDICTS

from ui import databases as ui_databases
from ui import services as ui_services
from ui import state as ui_state
from ui import trace as ui_trace
from ui.bootstrap import run_through_app
from agents.sqltext import format_sql
from ui.format import md_text
from ui.widgets.result import result_view

ANY = "(any)"
NOTICE = "hist_notice"


def _filters(store) -> dict:
    cols = st.columns(4)
    db = cols[0].selectbox("Database", [ANY, *store.distinct_values("db_name")],
                           key="hist_db")
    pipeline = cols[1].selectbox("Pipeline", [ANY, *store.distinct_values("pipeline")],
                                 key="hist_pipeline")
    verdict = cols[2].selectbox("Verdict", [ANY, UNANNOTATED, *VERDICTS], key="hist_verdict")
    error_type = cols[3].selectbox("Error type", [ANY, *ERROR_TYPES],
                                   format_func=lambda k: ERROR_TYPES[k].label
                                   if k in ERROR_TYPES else k, key="hist_error_type")
    search = st.text_input("Search questions, SQL and notes", key="hist_search")
    pick = lambda v: None if v == ANY else v  # noqa: E731
    return {"db_name": pick(db), "pipeline": pick(pipeline), "verdict": pick(verdict),
            "error_type": pick(error_type), "search": search.strip() or None}


def _table(rows: list[dict]) -> None:
    frame = pd.DataFrame([{
        "when": r["created_at"], "database": r["db_name"], "pipeline": r["pipeline"],
        "question": r["question"], "status": r["status"], "verdict": r.get("verdict") or "",
        "error type": ERROR_TYPES[r["error_type"]].label if r.get("error_type") in ERROR_TYPES
        else "", "calls": r["llm_calls"], "tokens": (r["prompt_tokens"] or 0)
        + (r["completion_tokens"] or 0), "seconds": r["seconds"], "run": r["run_id"],
    } for r in rows])
    st.dataframe(frame, hide_index=True, width="stretch", height=min(38 + 35 * len(frame), 360))


def _export(store, rows: list[dict]) -> None:
    """CSV and JSONL of the listed runs, built only when a button is clicked (the JSONL holds
    every full trace, too much to build on each rerun)."""
    left, right, _ = st.columns([1, 1, 3])
    listed = [dict(r) for r in rows]
    left.download_button("Export CSV", lambda: store.export_runs(listed, fmt="csv"),
                         file_name="runs.csv", mime="text/csv", key="export_csv",
                         on_click="ignore")
    right.download_button("Export JSONL", lambda: store.export_runs(listed, fmt="jsonl"),
                          file_name="runs.jsonl", mime="application/jsonl", key="export_jsonl",
                          on_click="ignore")


def _check_sql(run, sql: str) -> tuple[bool, str]:
    """Execute a corrected SQL safely against the run's database, when this session has it."""
    key = ui_databases.key_for_run(run.db_name)
    db = ui_databases.resolve(key) if key else None
    if db is None:
        return True, (f"The database '{run.db_name}' is not available in this session (upload it "
                      "on the Ask page to check), so the corrected SQL was saved unchecked.")
    limits = ui_state.exec_limits()
    result = db.execute(sql, timeout=limits.timeout, max_rows=limits.max_rows)
    if not result.ok:
        reason = f"Refused: {result.error}" if result.error_class == "UnsafeSQL" else \
            f"The corrected SQL does not run ({result.error_class or 'error'}): {result.error}"
        return False, reason
    return True, f"The corrected SQL runs on {run.db_name}: {result.row_count:,} row(s)."


def _annotate(store, run, latest: dict | None) -> None:
    st.subheader("Annotate")
    steps = [None, *range(len(run.events))]
    with st.form(f"annotate_{run.run_id}"):
        verdict = st.radio("Verdict", list(VERDICTS), horizontal=True,
                           index=VERDICTS.index(latest["verdict"]) if latest else 0)
        error_keys = [None, *ERROR_TYPES]
        error_type = st.selectbox(
            "Error type", error_keys,
            index=error_keys.index(latest["error_type"]) if latest and latest.get("error_type")
            in ERROR_TYPES else 0,
            format_func=lambda k: "(none)" if k is None
            else f"{ERROR_TYPES[k].label} — {ERROR_TYPES[k].description}")
        step = st.selectbox("Step at fault", steps,
                            format_func=lambda i: "(none)" if i is None
                            else ui_trace.done_label(run.events[i]))
        corrected = st.text_area("Corrected SQL (optional)",
                                 value=(latest or {}).get("corrected_sql") or "", height=120)
        notes = st.text_area("Notes", value=(latest or {}).get("notes") or "", height=80)
        submitted = st.form_submit_button("Save annotation", type="primary")
    if not submitted:
        return
    if verdict == "correct" and error_type:
        st.error("A run judged correct has no error type: pick '(none)' or another verdict.")
        return
    info = None
    if corrected.strip():
        ok, info = _check_sql(run, corrected)
        if not ok:
            st.error(info)
            return
    try:
        store.annotate(run.run_id, verdict, error_type=error_type, faulty_step=step,
                       corrected_sql=corrected.strip() or None, notes=notes)
    except ValueError as exc:
        st.error(f"Not saved: {md_text(exc)}")
        return
    st.session_state[NOTICE] = f"Annotation saved. {info or ''}".strip()
    st.rerun()


def _replay(store, run_id: str) -> None:
    run = store.get_run(run_id)
    if run is None:
        st.error("This run is no longer in the store.")
        return
    st.subheader("Replay")
    st.markdown(f"**{md_text(run.question)}**")
    if run.evidence:
        st.caption(f"Evidence: {md_text(run.evidence)}")
    totals = run.totals()
    st.caption(f"{md_text(run.db_name)} · {run.pipeline} · {run.status} · "
               + (f"model {run.model} · " if run.model else "") +
               f"{totals['llm_calls']} call(s) · {run.prompt_tokens + run.completion_tokens:,} "
               f"tokens · {totals['seconds']:.1f} s"
               + (f" · resumed from run {run.parent_run_id}" if run.parent_run_id else ""))
    ui_trace.render_trace(run.events)
    ui_trace.render_graph(run)
    if run.error:
        st.markdown(f":red[**Run {run.status}:** {md_text(run.error)}]")
    if run.final_sql:
        st.markdown("**Final SQL**")
        st.code(format_sql(run.final_sql), language="sql")
        result_view(run.result, key=f"hist_{run.run_id}")
    latest = store.get_annotation(run.run_id)
    if latest:
        label = ERROR_TYPES[latest["error_type"]].label if latest.get("error_type") in \
            ERROR_TYPES else "no error type"
        st.info(f"Latest annotation: **{latest['verdict']}** · {label}"
                + (f" · step {latest['faulty_step']}" if latest.get("faulty_step") else "")
                + (f" · {latest['notes']}" if latest.get("notes") else ""))
    _annotate(store, run, latest)


run_through_app()
st.title("History & annotation")
store = ui_services.store()
notice = st.session_state.pop(NOTICE, None)
if notice:
    st.success(notice)
filters = _filters(store)
rows = store.list_runs(**filters, limit=500)
wanted = st.session_state.get("hist_open")  # e.g. set by the Benchmark page's "open as a run"
if wanted and not any(filters.values()) and wanted not in {r["run_id"] for r in rows}:
    info = store.run_info(wanted)
    if info is not None:  # older than the newest 500 runs: still openable
        rows = [info] + rows
if not rows:
    st.info("No saved runs match. Runs are saved here when they finish on the Ask or Compare "
            "page (or from the command line).")
else:
    _table(rows)
    _export(store, rows)
    labels = {r["run_id"]: f"{r['created_at']} · {r['pipeline']} · {r['question'][:80]}"
              for r in rows}
    run_id = st.selectbox("Open a run", list(labels), format_func=labels.get, index=None,
                          placeholder="Choose a run to replay and annotate…", key="hist_open")
    if run_id:
        _replay(store, run_id)
