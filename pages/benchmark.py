"""Benchmark: compare pipelines on an evaluation, inspect the questions they got wrong, and open
any answer as a run in History to annotate it.

Results come from an ``eval`` output folder (``python -m agents eval --out DIR``; folders under
``bench/`` are offered) or from an uploaded ``results.jsonl``. Every number is recomputed from
the results lines, so a folder still being written shows its progress so far. Only light records
(no traces) are kept in memory; a trace is read from its line when a question is opened.
"""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import plotly.express as px
import streamlit as st

from agents.evaluation.records import (RESULTS_FILE, find_result_folders, read_full,
                                       record_to_run, scan_light)
from agents.evaluation.report import build_report, read_report
from agents.core.paths import REPO_ROOT

from ui import services as ui_services
from ui import signin
from ui.bootstrap import run_through_app
from agents.db.sqltext import format_sql
from ui.format import md_text, pipeline_label, preview_frame

BENCH_DIR = REPO_ROOT / "bench"
UPLOAD = "bench_upload_data"
SHOW = {"wrong": "Wrong answers", "all": "All answers", "correct": "Correct answers"}
HISTORY_PAGE = "pages/history.py"
HISTORY_OPEN = "hist_open"  # the History page's run picker
HISTORY_FILTERS = ("hist_db", "hist_pipeline", "hist_verdict", "hist_error_type", "hist_search")


# -- loading ---------------------------------------------------------------------------------------
@st.cache_resource(max_entries=4, show_spinner="Reading the results…")
def _load_folder(path: str, stamp: tuple) -> tuple[dict, list[dict]]:
    """(report metadata, light records) of a folder; ``stamp`` changes when the file grows."""
    report = read_report(path)
    with open(Path(path) / RESULTS_FILE, "rb") as fh:
        records = scan_light(fh)
    return _meta(report), records


def _meta(report: dict | None) -> dict:
    return {k: v for k, v in (report or {}).items()
            if k not in ("pipelines", "questions_evaluated")}


def _stamp(folder: Path) -> tuple:
    stat = (folder / RESULTS_FILE).stat()
    return (stat.st_mtime_ns, stat.st_size)


def _source() -> tuple[str, dict, list[dict], object] | None:
    """Pick the results; returns (label, metadata, light records, opener of the raw lines)."""
    mode = st.radio("Results", ["Evaluation folder", "Upload results.jsonl"], horizontal=True,
                    key="bench_source", label_visibility="collapsed")
    if mode == "Upload results.jsonl":
        return _uploaded()
    folders = find_result_folders(BENCH_DIR)
    labels = {str(f): _folder_label(f) for f in folders}
    left, right = st.columns([2, 3])
    picked = left.selectbox("Evaluation under bench/", list(labels), format_func=labels.get,
                            index=0 if labels else None, key="bench_folder",
                            placeholder="No evaluation folders under bench/ yet")
    typed = right.text_input("…or another output folder", key="bench_path",
                             placeholder="/path/to/eval/output (the --out folder)").strip()
    folder = Path(typed).expanduser() if typed else (Path(picked) if picked else None)
    if folder is None:
        st.info("Run `python -m agents eval --data DIR --pipelines baseline,macsql --out "
                "bench/runs/NAME` to create one, or upload a results.jsonl.")
        return None
    if not (folder / RESULTS_FILE).is_file():
        st.error(f"No {RESULTS_FILE} in {folder}.")
        return None
    meta, records = _load_folder(str(folder), _stamp(folder))
    return str(folder), meta, records, lambda: open(folder / RESULTS_FILE, "rb")


def _folder_label(folder: Path) -> str:
    try:
        return str(folder.relative_to(BENCH_DIR))
    except ValueError:
        return str(folder)


def _uploaded():
    upload = st.file_uploader("Results file", type=["jsonl"], key="bench_file")
    if upload is not None:
        data = upload.getvalue()
        held = st.session_state.get(UPLOAD)
        if not held or held["id"] != upload.file_id:
            records = scan_light(io.BytesIO(data))
            st.session_state[UPLOAD] = {"id": upload.file_id, "name": upload.name,
                                        "data": data, "records": records}
    held = st.session_state.get(UPLOAD)
    if not held:
        st.info("Upload the results.jsonl of an evaluation.")
        return None
    return held["name"], {}, held["records"], lambda: io.BytesIO(held["data"])


# -- summary and charts ----------------------------------------------------------------------------
def _header(label: str, report: dict) -> None:
    dataset = report.get("dataset") or {}
    sample = report.get("sample") or {}
    parts = [f"**{label}**"]
    if report.get("model"):
        parts.append(f"model {report['model']}")
    if dataset:
        missing = dataset.get("missing_by_db") or {}
        parts.append(f"{dataset.get('name')}: {dataset.get('total')} questions, "
                     f"{sum(missing.values())} skipped (database missing"
                     + (f": {', '.join(missing)}" if missing else "") + ")")
    if sample:
        parts.append(f"sample {sample.get('size')} ({sample.get('mode')}, seed "
                     f"{sample.get('seed')})")
    parts.append(f"{report['questions_evaluated']} questions with results")
    st.caption(" · ".join(parts))
    if report.get("notes"):
        for note in report["notes"]:
            st.caption(f"Note: {note}")
    sittings = [s for s in report.get("sittings") or [] if isinstance(s, dict)]
    if sittings:
        with st.expander(f"Sittings: {len(sittings)} (when each part ran, with which code, "
                         "beside how much load)"):
            load = st.column_config.NumberColumn(format="%.2f")
            st.dataframe(_sittings_frame(sittings), hide_index=True, width="stretch",
                         column_config={c: load for c in ("load at start", "highest load",
                                                          "load at end")})


def _sittings_frame(sittings: list[dict]) -> pd.DataFrame:
    """One row per invocation that wrote into the folder (:mod:`agents.evaluation.sittings`).
    The load average counts a local model server's threads too."""
    def number(value):
        return value if isinstance(value, (int, float)) else None
    return pd.DataFrame([{
        "started": s.get("started"), "ended": s.get("ended"), "code": s.get("code") or "unknown",
        "results": s.get("results"), "ended as": s.get("ended_as"),
        "load at start": number(s.get("load_start")), "highest load": number(s.get("load_max")),
        "load at end": number(s.get("load_end"))} for s in sittings])


def _summary_frame(pipelines: dict) -> pd.DataFrame:
    levels: list[str] = []
    for s in pipelines.values():
        levels += [h for h in s["by_hardness"] if h not in levels]
    rows = []
    for name, s in pipelines.items():
        row = {"pipeline": name, "questions": s["n"], "EX %": s["ex"]}
        for h in levels:
            row[f"{h} %"] = (s["by_hardness"].get(h) or {}).get("ex")
        share = s["outside_model_share"]
        row.update({"exec errors %": s["exec_error_rate"], "failed runs": s["failed_runs"],
                    "LLM calls/q": s["llm_calls_per_q"],
                    "prompt tokens/q": s["prompt_tokens_per_q"],
                    "completion tokens/q": s["completion_tokens_per_q"],
                    "s p50": s["seconds_p50"], "s p95": s["seconds_p95"],
                    "outside model %": None if share is None else round(100 * share, 1)})
        rows.append(row)
    return pd.DataFrame(rows)


def _charts(pipelines: dict) -> None:
    accuracy = pd.DataFrame(
        [{"pipeline": name, "hardness": "all", "EX %": s["ex"], "questions": s["n"]}
         for name, s in pipelines.items()]
        + [{"pipeline": name, "hardness": h, "EX %": v["ex"], "questions": v["n"]}
           for name, s in pipelines.items() for h, v in s["by_hardness"].items()])
    fig = px.bar(accuracy, x="hardness", y="EX %", color="pipeline", barmode="group",
                 hover_data=["questions"], title="Execution accuracy by hardness")
    fig.update_yaxes(range=[0, 100])
    st.plotly_chart(fig, key="bench_chart_accuracy")

    cost = pd.DataFrame([{"pipeline": name, "tokens per question": (s["prompt_tokens_per_q"] or 0)
                          + (s["completion_tokens_per_q"] or 0),
                          "prompt": s["prompt_tokens_per_q"] or 0,
                          "completion": s["completion_tokens_per_q"] or 0,
                          "LLM calls": s["llm_calls_per_q"] or 0,
                          "p50": s["seconds_p50"] or 0, "p95": s["seconds_p95"] or 0,
                          "EX %": s["ex"] or 0} for name, s in pipelines.items()])
    left, right = st.columns(2)
    tokens = cost.melt(id_vars="pipeline", value_vars=["prompt", "completion"],
                       var_name="tokens", value_name="per question")
    left.plotly_chart(px.bar(tokens, x="pipeline", y="per question", color="tokens",
                             title="Tokens per question"), key="bench_chart_tokens")
    seconds = cost.melt(id_vars="pipeline", value_vars=["p50", "p95"], var_name="percentile",
                        value_name="seconds")
    right.plotly_chart(px.bar(seconds, x="pipeline", y="seconds", color="percentile",
                              barmode="group", title="Seconds per question"),
                       key="bench_chart_seconds")
    if len(cost) < 2:  # one point is no trade-off, and its axis ticks were split fractions
        return
    fig = px.scatter(cost, x="tokens per question", y="EX %", text="pipeline",
                     hover_data=["LLM calls"], title="Accuracy against tokens per question")
    fig.update_traces(textposition="top center", marker={"size": 12})
    fig.update_xaxes(tickformat=",d", rangemode="tozero")
    st.plotly_chart(fig, key="bench_chart_tradeoff")


# -- questions -------------------------------------------------------------------------------------
def outcome(record: dict) -> str:
    if record.get("correct"):
        return "correct"
    if record.get("gold_error"):
        return "gold failed"
    if record.get("pred_error_class") == "NoSQL":
        return "failed run" if record.get("status") == "failed" else "no SQL"
    if record.get("pred_error"):
        return "execution error"
    return "wrong result"


def _questions(records: list[dict], open_raw) -> None:
    st.subheader("Questions")
    names = list(dict.fromkeys(r["pipeline"] for r in records))
    levels = list(dict.fromkeys(r.get("hardness") or "unknown" for r in records))
    a, b, c = st.columns(3)
    pipeline = a.selectbox("Pipeline", names, format_func=pipeline_label, key="bench_pipeline")
    show = b.selectbox("Show", list(SHOW), format_func=SHOW.get, key="bench_show")
    level = c.selectbox("Hardness", ["any", *levels], key="bench_hardness")
    chosen = [r for r in records if r["pipeline"] == pipeline
              and (show == "all" or bool(r.get("correct")) == (show == "correct"))
              and (level == "any" or (r.get("hardness") or "unknown") == level)]
    chosen.sort(key=lambda r: r["question_id"])
    if not chosen:
        st.info("No answers match.")
        return
    st.dataframe(pd.DataFrame([{
        "id": r["question_id"], "hardness": r.get("hardness") or "", "database": r["db_id"],
        "question": r["question"], "outcome": outcome(r),
        "seconds": (r.get("metrics") or {}).get("seconds")} for r in chosen]),
        hide_index=True, width="stretch", height=min(38 + 35 * len(chosen), 320))
    by_id = {r["question_id"]: r for r in chosen}
    qid = st.selectbox("Open a question", list(by_id), index=None, key="bench_question",
                       format_func=lambda i: f"#{i} · {by_id[i]['question'][:90]}",
                       placeholder="Choose a question to compare gold and predicted SQL…")
    if qid is not None:
        _detail(by_id[qid], [r for r in records if r["question_id"] == qid], open_raw)


def _detail(record: dict, same_question: list[dict], open_raw) -> None:
    st.markdown(f"**{md_text(record['question'])}**")
    if record.get("evidence"):
        st.caption(f"Evidence: {md_text(record['evidence'])}")
    st.caption(f"#{record['question_id']} · {record['db_id']} · {record.get('hardness') or '-'}"
               f" · {record['pipeline']}: {outcome(record)}"
               + (" · row order matters (ORDER BY)" if record.get("order_matters") else ""))
    gold_col, pred_col = st.columns(2)
    with gold_col:
        st.markdown("**Gold SQL**")
        st.code(format_sql(record.get("gold_sql")), language="sql")
        _result(record.get("gold"))
    with pred_col:
        st.markdown("**Predicted SQL**")
        if record.get("pred_sql"):
            st.code(format_sql(record["pred_sql"]), language="sql")
        if record.get("error"):
            st.markdown(f":red[**Run {record.get('status')}:** {md_text(record['error'])}]")
        if record.get("pred_error") and record.get("pred_error_class") != "NoSQL":
            st.markdown(f":red[**Execution error ({record.get('pred_error_class')}):** "
                        f"{md_text(record['pred_error'])}]")
        elif record.get("pred_error_class") == "NoSQL":
            st.markdown(":red[The pipeline produced no SQL.]")
        else:
            _result(record.get("pred"))
    others = [r for r in same_question if r["pipeline"] != record["pipeline"]]
    if others:
        st.caption("Other pipelines on this question: " + ", ".join(
            f"{r['pipeline']} {outcome(r)}" for r in others))
    if st.button("Open as a run in History", key="bench_open_run", type="primary"):
        _open_in_history(record, open_raw)


def _result(preview: dict | None) -> None:
    if not preview:
        return
    if not preview.get("ok"):
        st.markdown(f":red[{md_text(preview.get('error'))}]")
        return
    frame = preview_frame(preview)
    shown = len(frame)
    count = preview.get("row_count", shown)
    st.caption(f"{count:,} row(s)" + (f", first {shown} shown" if shown < count else "")
               + (" · capped" if preview.get("truncated") else ""))
    if not frame.empty:
        st.dataframe(frame, hide_index=True, width="stretch", height=min(38 + 35 * shown, 250))


def _open_in_history(record: dict, open_raw) -> None:
    """Save the question's run into the store and show it on the History page."""
    try:
        with open_raw() as fh:
            run = record_to_run(read_full(fh, record))
        run_id = ui_services.store().save_run(run, source="eval")
    except Exception as exc:  # a changed file or a store problem: say so, keep the page
        st.error(f"This answer cannot be opened as a run: {md_text(exc)}")
        return
    for key in HISTORY_FILTERS:  # a leftover filter could hide the run
        st.session_state.pop(key, None)
    st.session_state[HISTORY_OPEN] = run_id
    st.switch_page(HISTORY_PAGE)


def _no_records_text(open_raw) -> str:
    """Why a results file shows nothing: empty (an evaluation that has not answered yet), or
    lines none of which is an answer record (another kind of file)."""
    try:
        with open_raw() as fh:
            lines = sum(1 for line in fh if line.strip())
    except OSError:
        lines = 0
    if not lines:
        return "This results file holds no answers yet."
    return (f"This is not an evaluation's {RESULTS_FILE}: none of its {lines:,} line(s) is an "
            "answer record (one JSON object per line, as `python -m agents eval` writes them).")


# -- page ------------------------------------------------------------------------------------------
run_through_app()
if signin.team_mode() and not signin.viewer().is_admin:  # the menu hides it from analysts too
    st.error("Only an admin runs evaluations on this server: they hold its model for minutes.")
    st.stop()
st.title("Benchmark")
source = _source()
if source is not None:
    label, meta, records, open_raw = source
    if not records:
        st.warning(_no_records_text(open_raw))
    else:
        report = build_report(records, meta)
        _header(label, report)
        st.dataframe(_summary_frame(report["pipelines"]), hide_index=True, width="stretch")
        _charts(report["pipelines"])
        _questions(records, open_raw)
