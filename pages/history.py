"""History & annotation: every saved run with its outcome and accepted answer, replayed from the
store, judged and exported; and the accepted answers the example bank learns from."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from agents.core.outcome import OUTCOMES, run_outcome
from agents.db.sqltext import format_sql, same_sql
from agents.store import ERROR_TYPES, UNANNOTATED, VERDICTS, blamed_step_label

from ui import services as ui_services
from ui import signin
from ui import trace as ui_trace
from ui.bootstrap import run_through_app
from ui.format import md_text, pipeline_label
from ui.timefmt import local_time, zone_name
from ui.trace.edits import originals_for
from ui.widgets import lineage
from ui.widgets.accepted import accepted_pane
from ui.widgets.annotate import NOTICE, annotation_form
from ui.widgets.result import result_view
from ui.widgets.run_export import export_buttons

ANY = "(any)"
MINE = "(mine)"
ACCEPTED_FILTER = {ANY: None, "accepted": True, "not accepted": False}


def _filters(store) -> dict:
    cols = st.columns(4)
    db = cols[0].selectbox("Database", [ANY, *store.distinct_values("db_name")],
                           key="hist_db")
    pipeline = cols[1].selectbox("Pipeline", [ANY, *store.distinct_values("pipeline")],
                                 format_func=pipeline_label,
                                 key="hist_pipeline")
    verdict = cols[2].selectbox("Verdict", [ANY, UNANNOTATED, *VERDICTS], key="hist_verdict")
    error_type = cols[3].selectbox("Error type", [ANY, *ERROR_TYPES],
                                   format_func=lambda k: ERROR_TYPES[k].label
                                   if k in ERROR_TYPES else k, key="hist_error_type")
    team = signin.team_mode()
    cols = st.columns([1, 1, 1, 2] if team else [1, 1, 2])
    outcome = cols[0].selectbox("Outcome", [ANY, *OUTCOMES], key="hist_outcome")
    accepted = cols[1].selectbox("Accepted", list(ACCEPTED_FILTER), key="hist_accepted")
    owner = None
    if team:
        owners = [ANY, MINE] + [o for o in store.distinct_values("owner")
                                if o != signin.viewer().user]
        owner = cols[2].selectbox("Whose", owners, key="hist_owner",
                                  format_func=lambda o: o or "from before sign-in")
    search = cols[-1].text_input("Search questions, SQL and notes", key="hist_search")
    pick = lambda v: None if v == ANY else v  # noqa: E731
    return {"db_name": pick(db), "pipeline": pick(pipeline), "verdict": pick(verdict),
            "error_type": pick(error_type), "outcome": pick(outcome),
            "accepted": ACCEPTED_FILTER[accepted], "search": search.strip() or None,
            "owner": signin.viewer().user if owner == MINE else pick(owner)}


# The columns the list shows unless the user asks for more: what tells runs apart and what a
# reviewer sorts by. The short ones come first, so a narrow window (1024 px with the sidebar
# open) still shows the outcome, the review (verdict, error type, accepted), tokens, seconds
# and run id without a sideways scroll; the question follows (read in full under "Open a
# run"). The rest are one click away.
KEY_COLUMNS = ["when", "status", "verdict", "error type", "accepted", "tokens", "seconds", "run",
               "pipeline", "question"]
MORE_COLUMNS = ["database", "calls", "accepted SQL", "accepted by"]


def _column_config(zone: str) -> dict:
    text, number = st.column_config.TextColumn, st.column_config.NumberColumn
    return {
        "when": text(f"when ({zone})", width=125),
        "question": text("question", width="large", help="Open the run below to read it in full"),
        "status": text("outcome", width=105, help="how the run ended (the Outcome filter)"),
        "error type": text("error type", width=85),
        "tokens": number("tokens", width=55, format="%d"),
        "seconds": number("s", width=55, format="%.1f", help="seconds"),
        "run": text("run", width=105),
        "pipeline": text("pipeline", width=75),
        "verdict": text("verdict", width=70),
        "accepted": text("accepted", width=70),
        "database": text("database", width=90),
        "calls": number("calls", width=50),
        "accepted SQL": text("accepted SQL", width="large"),
        "accepted by": text("accepted by", width=180),
    }


def _table(rows: list[dict]) -> None:
    """The listed runs: the key columns at a width each, more columns on demand, times in the
    server's local time zone (named in the header)."""
    frame = pd.DataFrame([{
        "when": local_time(r["created_at"], zone=False, seconds=False), "database": r["db_name"],
        "pipeline": r["pipeline"], "question": r["question"],
        "status": r.get("outcome") or r["status"],
        "accepted": "yes" if r.get("accepted") == "yes" else "",
        "accepted SQL": r.get("accepted_sql") or "",
        "accepted by": " · ".join(v for v in (r.get("accepted_by"),
                                              local_time(r.get("accepted_at"))) if v)
        if r.get("accepted") == "yes" else "",
        "verdict": r.get("verdict") or "",
        "error type": ERROR_TYPES[r["error_type"]].label if r.get("error_type") in ERROR_TYPES
        else "", "calls": r["llm_calls"], "tokens": (r["prompt_tokens"] or 0)
        + (r["completion_tokens"] or 0), "seconds": r["seconds"], "run": r["run_id"],
    } for r in rows])
    more = st.multiselect("More columns", MORE_COLUMNS, key="hist_more_columns",
                          placeholder="Show more columns: database, calls, accepted SQL…")
    order = KEY_COLUMNS + [c for c in MORE_COLUMNS if c in more]
    st.dataframe(frame, hide_index=True, width="stretch", column_order=order,
                 column_config=_column_config(zone_name()),
                 height=min(38 + 35 * len(frame), 360))


def _export(store, rows: list[dict]) -> None:
    """CSV and JSONL of the listed runs, built only when a button is clicked (the JSONL holds
    every full trace, too much to build on each rerun)."""
    listed = [dict(r) for r in rows]
    row = st.container(horizontal=True)  # each button as wide as its label: none is cut short
    row.download_button("Export CSV", lambda: store.export_runs(listed, fmt="csv"),
                         file_name="runs.csv", mime="text/csv", key="export_csv",
                         on_click="ignore")
    row.download_button("Export JSONL", lambda: store.export_runs(listed, fmt="jsonl"),
                          file_name="runs.jsonl", mime="application/jsonl", key="export_jsonl",
                          on_click="ignore")


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
    st.caption(f"{md_text(run.db_name)} · {run.pipeline} · {run_outcome(run)} · "
               + (f"model {md_text(run.model)} · " if run.model else "") +
               f"{totals['llm_calls']} call(s) · {run.prompt_tokens + run.completion_tokens:,} "
               f"tokens · {totals['seconds']:.1f} s")
    parent = lineage.family_links(store, run)
    if parent is not None and st.toggle("Show side by side with the original run",
                                        key=f"hist_side_{run.run_id}"):
        lineage.side_by_side(parent, run)
    else:
        ui_trace.render_trace(run.events, originals=originals_for(run))
    ui_trace.render_graph(run)
    if run.error:
        st.markdown(f":red[**Run {run.status}:** {md_text(run.error)}]")
    if run.final_sql:
        st.markdown(f"**Final SQL** ({run_outcome(run)})")
        st.code(format_sql(run.final_sql), language="sql")
        result_view(run.result, key=f"hist_{run.run_id}")
    info = store.run_info(run.run_id) or {}
    if info.get("accepted") == "yes":
        _accepted(store, run, info)
    export_buttons(run, key=f"hist_{run.run_id}")
    latest = store.get_annotation(run.run_id)
    if latest:
        label = ERROR_TYPES[latest["error_type"]].label if latest.get("error_type") in \
            ERROR_TYPES else "no error type"
        blamed = blamed_step_label(latest, run)
        st.info(f"Latest annotation: **{latest['verdict']}** · {label}"
                + (f" · {blamed}" if blamed else "")
                + (f" · by {md_text(latest['author'])}" if latest.get("author") else "")
                + (f" · {md_text(latest['notes'])}" if latest.get("notes") else ""))
    annotation_form(store, run, latest)
    if signin.team_mode():
        _ownership(store, info)


def _ownership(store, info: dict) -> None:
    """Whose run this is; its owner (or an admin) shares it or deletes it."""
    if not info.get("run_id"):  # deleted meanwhile
        return
    st.caption(f"Run {signin.whose(info)}.")
    if not signin.viewer().may_change(info):
        return
    run_id = info["run_id"]
    key = f"run_shared_{run_id}"
    st.session_state[key] = bool(info.get("shared"))
    st.checkbox("Shared with the team", key=key, on_change=_share, args=(store, run_id, key))
    st.button("Delete this run", key=f"run_delete_{run_id}", on_click=_delete,
              args=(store, run_id))


def _share(store, run_id: str, key: str) -> None:
    try:
        store.set_run_shared(run_id, bool(st.session_state.get(key)))
    except ValueError as exc:  # deleted, or no longer the user's to change
        st.session_state[NOTICE] = str(exc)


def _delete(store, run_id: str) -> None:
    try:
        store.delete_run(run_id)
    except ValueError as exc:  # no longer the user's to delete
        st.session_state[NOTICE] = str(exc)
        return
    st.session_state.pop("hist_open", None)
    st.session_state[NOTICE] = "Run deleted (an answer accepted from it stays)."


def _accepted(store, run, info: dict) -> None:
    """The accepted answer on record for this run, beside the model's SQL."""
    who = f" by {info['accepted_by']}" if info.get("accepted_by") else ""
    edited = not same_sql(info.get("accepted_sql"), run.final_sql)
    st.success(md_text(f"Accepted{who} at {local_time(info['accepted_at'])}"
                       + (" — the user's corrected SQL:" if edited else
                          " — the model's SQL as it is.")))
    if edited:
        st.code(format_sql(info["accepted_sql"]), language="sql")
        answer = store.get_accepted(info["accepted_id"]) or {}
        result_view(answer.get("result_preview"), key=f"hist_accepted_{run.run_id}",
                    chart=False)


def _runs(store) -> None:
    """The runs tab: filters, the list, its exports and the opened run."""
    notice = st.session_state.pop(NOTICE, None)
    if notice:
        st.success(notice)
    filters = _filters(store)
    rows = store.list_runs(**filters, limit=500)
    wanted = st.session_state.get("hist_open")  # set by "open as a run" or a parent/child link
    unfiltered = all(v is None for v in filters.values())
    if wanted and unfiltered and wanted not in {r["run_id"] for r in rows}:
        info = store.run_info(wanted)
        if info is not None:  # older than the newest 500 runs: still openable
            rows = [info] + rows
    if not rows:
        st.info("No saved runs match. Runs are saved here when they finish on the Ask or Compare "
                "page (or from the command line).")
    else:
        _table(rows)
        _export(store, rows)
        # the run id tells a run from its resumed copies, which share question and pipeline
        labels = {r["run_id"]: f"{local_time(r['created_at'])} · {r['pipeline']} · "
                               f"run {r['run_id']} · {r['question'][:80]}"
                  for r in rows}
        run_id = st.selectbox("Open a run", list(labels), format_func=labels.get, index=None,
                              placeholder="Choose a run to replay and annotate…", key="hist_open")
        if run_id:
            _replay(store, run_id)


run_through_app()
st.title("History & annotation")
store = ui_services.store()
runs_tab, accepted_tab = st.tabs(["Runs", "Accepted answers"])
with runs_tab:
    _runs(store)
with accepted_tab:
    accepted_pane(store)
