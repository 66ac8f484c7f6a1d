"""The answer pane: the final SQL (editable, re-runnable), its result table, a chart, Accept,
CSV download and the run's report.

It is a fragment: running edited SQL, switching the chart or accepting reruns only this pane,
never the page above it (and so never the model). Edited SQL runs through the database's safe
execution layer, which refuses anything but a read-only query and says why; a name error gets
the same hint an agent's repair step gets; where one clear change makes the query run
(:mod:`agents.rules.name_rewrite`), the pane also offers that query, with a button that puts it in
the SQL box. A failed edit replaces the result shown (a table
under the error would look like its result), and a result from SQL other than the box's is
labelled as such.
"""

from __future__ import annotations

import streamlit as st
from pandas.api.types import is_numeric_dtype

from agents.rules.error_hints import explain_error
from agents.rules.name_rewrite import REWRITE_LEAD, REWRITE_SECONDS, Rewrite, runnable_rewrite
from agents.core.events import Run
from agents.core.outcome import DONE_FAILS, run_outcome
from agents.runs.draft import final_note
from agents.runs.result_summary import summary_text

from ui.widgets import charts as ui_charts
from ui import databases as ui_databases
from ui import state as ui_state
from agents.db.exec_result import limit_note
from agents.db.sqltext import format_sql, same_sql
from agents.store.export import safe_cell
from ui.format import md_text, preview_frame
from ui import answer_review
from ui.widgets.accept import accept_answer, accepted_note, failure_text
from ui.widgets.run_export import export_buttons

CHART_OPTIONS = ["auto", *ui_charts.KINDS, "hide"]


def csv_bytes(frame) -> bytes:
    """The result table as CSV whose text cells never start a spreadsheet formula."""
    safe = frame.apply(lambda col: col if is_numeric_dtype(col) else col.map(safe_cell))
    safe.columns = [safe_cell(str(c)) for c in frame.columns]
    return safe.to_csv(index=False).encode("utf-8")


def result_view(preview: dict | None, *, key: str, max_rows: int | None = None,
                chart: bool = True) -> None:
    """A result preview as a sortable table with its row count and (unless ``chart`` is off) a
    chart when the result suits one."""
    if not preview:
        return
    if not preview.get("ok"):
        kind = f" ({preview['error_class']})" if preview.get("error_class") else ""
        st.markdown(f":red[**The query failed{kind}:** "
                    f"{md_text(preview.get('error') or 'unknown error')}]")
        if preview.get("hint"):
            st.caption(md_text(preview["hint"]))
        return
    frame = preview_frame(preview)
    count = preview.get("row_count", len(frame))
    note = f"{count:,} row(s) · {preview.get('seconds') or 0:.2f} s"
    if preview.get("truncated") and preview.get("truncated_reason") != "bytes":
        cap = f"the row cap of {max_rows:,}" if max_rows else "the row cap"
        note += f" · truncated at {cap} (narrow the query or raise the cap in Settings)"
    elif preview.get("truncated") or preview.get("cells_cut"):
        note += f" · {limit_note(preview)} (narrow the query)"
    elif len(frame) < count:
        note += f" · showing the first {len(frame):,}"
    st.caption(note)
    if frame.empty:
        st.info("The query returned no rows." if not preview.get("columns") or count == 0
                else "No rows to show.")
        return
    st.dataframe(frame, hide_index=True, width="stretch")
    if chart:
        _chart(frame, key)


def _chart(frame, key: str) -> None:
    auto = ui_charts.choose_chart(frame)
    if auto is None:
        return
    kind = st.segmented_control("Chart", CHART_OPTIONS, default="auto", key=f"chart_{key}",
                                format_func=lambda k: f"auto ({auto.kind})" if k == "auto" else k)
    if kind == "hide":
        return
    kind = auto.kind if kind in (None, "auto") else kind
    columns = list(frame.columns)
    left, right = st.columns(2)
    x = left.selectbox("x", columns, index=columns.index(auto.x), key=f"chart_x_{key}")
    y = right.selectbox("y", columns, index=columns.index(auto.y), key=f"chart_y_{key}")
    try:
        st.plotly_chart(ui_charts.figure(frame, kind, x, y), key=f"plot_{key}")
    except Exception as exc:  # an odd column pairing must not break the pane
        st.caption(md_text(f"This chart cannot be drawn from {x} and {y}: {exc}"))


def _edited_key(run: Run) -> str:
    return f"edited_result_{run.run_id}"


@st.fragment
def answer_pane(run: Run, db_key: str | None) -> None:
    """The final answer of ``run`` with everything a person does next."""
    st.subheader("Answer", anchor="answer")
    st.caption(f"Run {run.run_id} · {run.pipeline} · {run_outcome(run)} · {cost_text(run)}")
    outcome, note = final_note(run.events)
    if note:
        st.caption(md_text(f"Draft answer {note}."))
    words = summary_text(run)
    if words:  # the answer in words leads; the table it was written from follows
        st.markdown(md_text(words))
    if answer_review.refusal(run):
        export_buttons(run, key=f"ask_{run.run_id}")
        return
    if run.status == "failed":
        st.error(md_text(f"The run failed: {run.error}"))
    elif run.status == "stopped":
        st.warning(f"Stopped by the user after {len(run.events)} step(s).")
    if not run.final_sql:
        if run.status == "done":
            st.info("The pipeline finished without producing SQL.")
        export_buttons(run, key=f"ask_{run.run_id}")
        return

    limits = ui_state.exec_limits()
    sql_key = f"sql_{run.run_id}"
    if sql_key not in st.session_state:
        st.session_state[sql_key] = format_sql(run.final_sql)
    result_area = st.container()  # the result leads; the SQL it came from follows, editable
    st.text_area("Final SQL (you can edit it)", key=sql_key, height=160)
    run_col, accept_col, download_col = st.columns(3)
    run_clicked = run_col.button("Run edited SQL", key=f"run_sql_{run.run_id}")
    accept_clicked = accept_col.button("Accept", type="primary", key=f"accept_{run.run_id}",
                                       help="Keep this question, SQL and result as an approved "
                                            "answer and save the run.")
    message = None
    if run_clicked:
        message = _run_edited(run, db_key, st.session_state[sql_key], limits)
    if accept_clicked and message is None:
        message = _accept(run, db_key, st.session_state[sql_key],
                          st.session_state.get(_edited_key(run)), limits)
    edited = st.session_state.get(_edited_key(run))
    preview = edited["preview"] if edited else run.result
    shown_sql = edited["sql"] if edited else run.final_sql
    # the box no longer holds the SQL the error and its hint are about (e.g. the version that
    # runs was put there): say so instead of offering that hint again
    box = st.session_state[sql_key]
    box_changed = not (same_sql(shown_sql, box) or same_sql(format_sql(shown_sql), box))
    if message is not None:
        level, text = message
        getattr(st, level)(md_text(text))
    elif preview and not preview.get("ok") and run.status != "failed":
        whose = "Your edited SQL" if edited else f"The run is {DONE_FAILS}: its SQL"
        st.error(md_text(f"{whose} did not run: {preview.get('error')}"))
    if preview and not preview.get("ok"):
        hint, rewrite = _hint(run, db_key, preview, limits)
        if box_changed:  # the hint still names what the failing SQL meant; no offer again
            st.info("The SQL in the box is not the one that failed: press 'Run edited SQL' to "
                    "run it.")
            if hint:
                st.caption(md_text(f"Hint about the SQL that failed: {hint}"))
        else:
            if hint:
                st.caption(md_text(f"Hint: {hint}"))
            if rewrite is not None:
                _offer_rewrite(rewrite, sql_key)
    _accepted_note(run)
    if preview and preview.get("ok"):
        frame = preview_frame(preview)
        download_col.download_button(
            "Download CSV", csv_bytes(frame),
            file_name=f"{run.db_name}_{run.run_id}.csv", mime="text/csv",
            key=f"csv_{run.run_id}", on_click="ignore")
        with result_area:
            if not box_changed and not edited:
                answer_review.doubt(run, sql_key)
            if box_changed:
                st.warning("This result is from the previous SQL, not the SQL in the box "
                           "below: press 'Run edited SQL' to update it.")
            elif edited:
                st.caption("Showing the result of your edited SQL.")
            answer_review.empty_note(run, preview, bool(edited))
            result_view(answer_review.shown_result(run, preview, bool(edited)),
                        key=run.run_id, max_rows=limits.max_rows)
    export_buttons(run, key=f"ask_{run.run_id}")


def cost_text(run: Run) -> str:
    """The run's model calls, tokens and seconds. A resumed run counts the steps it ran itself,
    as its seconds do (the steps before were carried over from the run it was resumed from)."""
    own = run.events[run.resumed_from or 0:] if run.parent_run_id else run.events
    calls = sum(len(e.calls) for e in own)
    tokens = sum(e.prompt_tokens + e.completion_tokens for e in own)
    text = f"{calls} model call(s) · {tokens:,} tokens · {run.seconds:.1f} s"
    if run.parent_run_id:
        start = (run.resumed_from or 0) + 1
        carried = "step 1" if start == 2 else f"steps 1-{start - 1}"
        text += (f" from step {start} on, resumed from run {run.parent_run_id} ({carried} "
                 "carried over)" if start > 1 else
                 f", resumed from run {run.parent_run_id} at step 1")
    return text


def _hint(run: Run, db_key: str | None, preview: dict,
          limits) -> tuple[str | None, Rewrite | None]:
    """The name hint of a failing result in words, and a version of the query that runs where
    one clear change makes it run (:mod:`agents.rules.name_rewrite`). The run's own final SQL gets
    them here too: the engine stores its result without. Both are worked out once per failing
    SQL (the rewrite runs its candidate, within the query time limit and 2 s), not on every
    rerun of the pane."""
    if preview.get("error_class") == "UnsafeSQL":
        return preview.get("hint"), None
    db = ui_databases.resolve(db_key)
    sql = preview.get("sql") or run.final_sql or ""
    if db is None:
        return _words(preview.get("hint")), None
    found = st.session_state.setdefault("name_rewrites", {})
    key = (db_key, sql, preview.get("error"))
    if key not in found:
        try:
            hint = explain_error(preview.get("error"), sql, db.schema)
        except Exception:  # a hint is a courtesy; the error above already says what failed
            hint = None
        try:
            rewrite = runnable_rewrite(db, preview.get("error"), sql, db.schema,
                                       timeout=min(limits.timeout, REWRITE_SECONDS))
        except Exception:
            rewrite = None
        found[key] = (hint, rewrite)
    return found[key]


def _words(hint: str | None) -> str | None:
    """A stored hint without the rewritten query at its end (shown apart, with a button)."""
    return hint.split(" " + REWRITE_LEAD, 1)[0] if hint else hint


def _offer_rewrite(rewrite: Rewrite, sql_key: str) -> None:
    """The query that runs, and a button that puts it in the SQL box (run it from there)."""
    st.caption(md_text(f"{REWRITE_LEAD} {'; '.join(rewrite.changes)}:"))
    st.code(format_sql(rewrite.sql), language="sql")

    def use() -> None:
        st.session_state[sql_key] = format_sql(rewrite.sql)

    st.button("Put this version in the SQL box", key=f"rewrite_{sql_key}", on_click=use,
              help="Replaces the SQL above with this version; press 'Run edited SQL' to see "
                   "its result, and judge whether it answers the question.")


def _accepted_note(run: Run) -> None:
    """Say so when this run already has an accepted answer on record."""
    note = accepted_note(run.run_id)
    if note:
        st.caption(f"{note}: see History, where it is listed with the run and under Accepted "
                   "answers.")


def _run_edited(run: Run, db_key: str | None, sql: str, limits) -> tuple[str, str] | None:
    db = ui_databases.resolve(db_key)
    if db is None:
        return "error", (f"The database '{run.db_name}' is not available in this session any "
                         "more (uploads last only as long as the browser tab), so the SQL "
                         "cannot be run.")
    if not sql.strip():
        return "error", "The SQL box is empty."
    # the hint and the rewrite of a failure are worked out by the pane, once (``_hint``)
    result = db.execute(sql, timeout=limits.timeout, max_rows=limits.max_rows)
    # a failure replaces the result too: the old table must not pass for this SQL's result
    st.session_state[_edited_key(run)] = {"sql": sql,
                                          "preview": result.preview(rows=limits.max_rows)}
    return None if result.ok else ("error", failure_text(result))


def _accept(run: Run, db_key: str | None, sql: str, edited: dict | None,
            limits) -> tuple[str, str]:
    """Store the SQL in the box as the accepted answer, after checking it runs."""
    if not sql.strip():
        return "error", "There is no SQL to accept."
    if edited and same_sql(edited["sql"], sql):
        preview = edited["preview"]
    elif same_sql(run.final_sql, sql) or same_sql(format_sql(run.final_sql), sql):
        preview = run.result
    else:
        failed = _run_edited(run, db_key, sql, limits)
        if failed is not None:
            return failed
        preview = st.session_state[_edited_key(run)]["preview"]
    return accept_answer(run, sql, preview)
