"""Compare: several pipelines on the same question, side by side, with their agreement; one
pipeline's SQL (or an edit of it) can be accepted as the answer, as on the Ask page."""

from __future__ import annotations

import streamlit as st

from agents.runs.compare import ComparisonResult, compare
from agents.core.jobs import Job, start_job, stop_job
from agents.pipelines import get_pipeline, list_pipelines

from ui import databases as ui_databases
from ui import services as ui_services
from ui import state as ui_state
from ui import live
from ui import trace as ui_trace
from ui.bootstrap import run_through_app
from ui.widgets.db_panel import database_picker
from agents.db.sqltext import format_sql
from ui.format import md_text, pipeline_label
from ui.widgets import conversation as ui_conversation
from ui.widgets.compare_accept import CHOICE, accept_panel
from ui.widgets.result import result_view

JOB = "cmp_job"
RESULT = "cmp_result"
NAMES = "cmp_job_pipelines"
DB = "cmp_job_db"  # the compared database, where an edited SQL is run before it is accepted


def _previous_run(db_key: str | None):
    """The run a follow-up on this page builds on: the previous comparison's answer as chosen
    under "Accept an answer" (by default the pipeline most others agree with), when that
    comparison was on the database now chosen."""
    result = st.session_state.get(RESULT)
    if not isinstance(result, ComparisonResult) or st.session_state.get(DB) != db_key:
        return None
    candidates = [o for o in result.outcomes if o.final_sql and o.run is not None]
    if not candidates:
        return None
    chosen = st.session_state.get(CHOICE)
    by_name = {o.pipeline: o for o in candidates}
    if chosen not in by_name:
        chosen = next((n for g in result.groups for n in g if n in by_name),
                      candidates[0].pipeline)
    return by_name[chosen].run


def _start(names: list[str], question: str, evidence: str, db_key: str | None, db) -> None:
    from agents.core.config import SettingsError
    from agents.llm.client import LLMError

    context = ui_conversation.new_run_context(db, evidence, _previous_run(db_key), prefix="cmp")
    if context is None:
        return
    try:
        llm = ui_services.llm_client(ui_state.effective_settings())
    except (SettingsError, LLMError) as exc:
        st.error(f"The model is not available: {md_text(exc)}")
        return
    params = {n: ui_state.pipeline_defaults(get_pipeline(n)) for n in names}
    limits = ui_state.exec_limits()
    store = ui_services.store()
    shared = ui_databases.sharing_rule()
    services = ui_services.example_services(db)

    def work(job: Job) -> ComparisonResult:
        return compare(names, question, db, llm, evidence=context.evidence(),
                       params_by_pipeline=params, on_item=job.emit, limits=limits,
                       cancel=job.control.cancel, services=services, context=context.to_dict())

    def save(result: ComparisonResult) -> None:
        for outcome in result.outcomes:
            if outcome.run is not None:
                store.save_run(outcome.run, source="app",
                               shared=shared(outcome.run.db_name, outcome.run))

    st.session_state[JOB] = start_job("comparison", work, save)
    st.session_state[NAMES] = names
    st.session_state[DB] = db_key


def _follow(job: Job, names: list[str]) -> None:
    """Each pipeline's steps live in its own column until the comparison ends: the running
    step open, with its model's output growing as it writes; finished steps folded."""
    columns = dict(zip(names, st.columns(len(names))))
    for name, column in columns.items():
        column.markdown(f"**{pipeline_label(name)}**")
    live.follow(job, columns=columns, expanded=False)


def _stop() -> None:
    job = st.session_state.get(JOB)
    if isinstance(job, Job):
        stop_job(job, save=lambda result: None)


def _outcomes(result: ComparisonResult) -> None:
    failed = [o.pipeline for o in result.outcomes if o.group is None]
    failed_text = f" No working result from: {', '.join(failed)}." if failed else ""
    unfinished = [get_pipeline(o.pipeline).title or o.pipeline for o in result.outcomes
                  if o.status != "done"]
    if result.all_agree and unfinished:
        runs = ("its run: the SQL shown is the last it reached" if len(unfinished) == 1
                else "their runs: the SQL shown is the last each reached")
        st.warning(f"All pipelines' last SQL return the same rows, but {', '.join(unfinished)} "
                   f"did not finish {runs}.")
    elif result.all_agree:
        st.success("All pipelines return the same rows.")
    elif len(result.groups) == 1 and len(result.groups[0]) > 1:
        st.warning(f"{' = '.join(result.groups[0])} return the same rows.{failed_text}")
    elif len(result.groups) == 1:
        st.warning(f"Only {result.groups[0][0]} produced a result that runs.{failed_text}")
    elif result.groups:
        groups = " | ".join(" = ".join(g) for g in result.groups)
        st.warning(f"The pipelines disagree. Groups with equal results: {groups}.{failed_text}")
    else:
        st.warning("No pipeline produced a result that runs.")
    columns = st.columns(len(result.outcomes))
    for outcome, column in zip(result.outcomes, columns):
        with column:
            st.markdown(f"**{pipeline_label(outcome.pipeline)}**")
            others = [n for n in (result.groups[outcome.group] if outcome.group is not None
                                  else []) if n != outcome.pipeline]
            agreement = ("agrees with " + ", ".join(others)) if others else (
                "no other pipeline agrees" if outcome.group is not None else "no result")
            st.caption(f"{outcome.status} · {agreement}")
            # one line, not three metrics: beside three or four pipelines a metric's width
            # cut a token count to "3,…"
            calls = f"{outcome.calls:,} call{'' if outcome.calls == 1 else 's'}"
            st.markdown(f"**{calls}** · **{outcome.prompt_tokens + outcome.completion_tokens:,}"
                        f"** tokens · **{outcome.seconds:.1f}** s")
            if outcome.error:
                st.markdown(f":red[{md_text(outcome.error)}]")
            if outcome.final_sql:
                st.code(format_sql(outcome.final_sql), language="sql", wrap_lines=True)
                result_view(outcome.result, key=f"cmp_{outcome.pipeline}",
                            max_rows=ui_state.exec_limits().max_rows, chart=False)
            if outcome.run is not None and outcome.run.events:
                with st.expander("Agent steps"):
                    ui_trace.render_trace(outcome.run.events)


run_through_app()
st.title("Compare pipelines")
job = st.session_state.get(JOB)
running = isinstance(job, Job) and not job.finished
left, right = st.columns([2, 3], gap="large")
with left:
    db_key, db = database_picker("compare", allow_upload=False)
    st.caption("The sample databases and those uploaded on the Ask page are offered here.")
with right:
    names = [p.name for p in list_pipelines()]
    st.text_area("Question", key="cmp_question", height=80)
    st.text_input("Evidence / hint (optional)", key="cmp_evidence")
    ui_conversation.context_controls(db, _previous_run(db_key), prefix="cmp")
    if "cmp_pipelines" not in st.session_state:
        st.session_state["cmp_pipelines"] = names[:2]
    chosen = st.multiselect("Pipelines", names, key="cmp_pipelines", format_func=pipeline_label)
    st.caption("Each pipeline runs with its defaults from the Settings page, one after another.")
    if st.button("Compare", type="primary", disabled=running or db is None, key="cmp_go"):
        question = (st.session_state.get("cmp_question") or "").strip()
        if not question:
            st.error("Type a question first.")
        elif len(chosen) < 2:
            st.error("Choose at least two pipelines to compare.")
        else:
            _start(list(chosen), question, (st.session_state.get("cmp_evidence") or "").strip(),
                   db_key, db)
            if isinstance(st.session_state.get(JOB), Job):
                st.session_state.pop(RESULT, None)  # the previous comparison leaves the page
                st.rerun()  # draw the page as it is now: Compare disabled, Stop shown

# The running comparison and the finished one each have their own slot; a slot with nothing to
# draw stays empty, which removes the previous comparison at once instead of leaving it faded
# under the new one while that runs.
live_slot, result_slot = st.empty(), st.empty()
job = st.session_state.get(JOB)
if isinstance(job, Job):
    with live_slot.container():
        st.divider()
        if not job.finished:
            st.button("Stop the comparison", key="cmp_stop", on_click=_stop,
                      help="Stop now: the model call in flight is ended and the remaining "
                           "pipelines are skipped.")
            _follow(job, st.session_state.get(NAMES) or [])
        finished = live.settle(job, JOB)
        if finished is not None:
            st.session_state[RESULT] = finished
            st.rerun()

result = st.session_state.get(RESULT)
if isinstance(result, ComparisonResult):
    with result_slot.container():
        st.divider()
        st.markdown(f"**{md_text(result.question)}** on {md_text(result.db_name)}")
        given = next((o.run for o in result.outcomes if o.run is not None), None)
        if given is not None:
            ui_conversation.thread_panel(given)
            ui_conversation.context_panel(given)
        _outcomes(result)
        st.divider()
        accept_panel(result, st.session_state.get(DB))
