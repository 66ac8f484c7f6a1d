"""Ask: pick or upload a database, ask a question, watch every agent step, use the answer."""

from __future__ import annotations

import dataclasses

import streamlit as st

from agents.core.engine import resume_run, start_run
from agents.core.jobs import Job, run_job, stop_job
from agents.runs.result_summary import is_summary, pipeline_events, with_summary
from agents.pipelines import get_pipeline, list_pipelines

from ui import databases as ui_databases
from ui.widgets import conversation as ui_conversation
from ui.widgets import params as ui_params
from ui.widgets import resume as ui_resume
from ui import live
from ui import preferences as ui_preferences
from ui import scroll as ui_scroll
from ui import services as ui_services
from ui import state as ui_state
from ui import warmup as ui_warmup
from ui import trace as ui_trace
from ui.bootstrap import run_through_app
from ui.format import md_text, pipeline_label
from ui.trace.edits import originals_for
from ui.widgets.db_panel import database_picker, database_summary
from ui.widgets.draft import DraftPane
from ui.widgets.result import answer_pane

JOB = "ask_job"
RUN = "ask_run"
RUN_DB = "ask_run_db"
JOB_DB = "ask_job_db"
JOB_NOTES = "ask_job_notes"
SCROLL_TO_ANSWER = "ask_scroll_to_answer"  # the run whose answer is brought into view once
BOX_SAW = "ask_box_saw"


def _fill_example() -> None:
    choice = st.session_state.get("ask_example")
    if choice:
        st.session_state["ask_question"] = choice
        st.session_state["ask_evidence"] = ""
    st.session_state["ask_example"] = None


def _active_job() -> Job | None:
    job = st.session_state.get(JOB)
    return job if isinstance(job, Job) else None


def _saver():
    store = ui_services.store()  # resolved here: the worker thread has no script context
    shared = ui_databases.sharing_rule()

    def save(run) -> None:
        store.save_run(run, source="app", shared=shared(run.db_name, run))
        store.add_to_thread(run)
    return save


def _stop() -> None:
    job = _active_job()
    if job is not None and not job.finished:
        stop_job(job, _saver())


def _client():
    """The model client for this session's settings, or None after showing why not."""
    from agents.core.config import SettingsError
    from agents.llm.client import LLMError

    try:
        return ui_services.llm_client(ui_state.effective_settings())
    except (SettingsError, LLMError) as exc:
        st.error(f"The model is not available: {md_text(exc)}")
    except Exception as exc:  # e.g. the embedded server failing to start
        st.error(f"The model could not be started: {md_text(exc)}")
    return None


def _previous_run(db_key: str | None):
    """The last finished run of this session when it was on the database now chosen (a job
    that has just finished counts before the page has taken its run)."""
    job = _active_job()
    if job is not None and job.finished and hasattr(job.result, "final_sql"):
        return job.result if st.session_state.get(JOB_DB) == db_key else None
    run = st.session_state.get(RUN)
    return run if run is not None and st.session_state.get(RUN_DB) == db_key else None


def _start(pipeline, db_key: str, db, question: str, hint: str, params: dict) -> None:
    try:
        resolved = pipeline.resolve_params(params)
    except ValueError as exc:
        st.error(f"Invalid parameter: {md_text(exc)}")
        return
    context = ui_conversation.new_run_context(db, hint, _previous_run(db_key))
    if context is None:
        return
    _launch(pipeline, db_key, db, lambda llm, limits, services, control: start_run(
        pipeline, question, db, llm, evidence=context.evidence(), params=resolved,
        limits=limits, control=control, services=services, context=context.to_dict()),
        summary=bool(st.session_state.get(ui_conversation.SUMMARY)), params=params)


def _launch(pipeline, db_key: str, db, items, *, summary: bool = False,
            params: dict | None = None) -> None:
    """Start ``items(llm, limits, services, control)`` (a start or resume of the engine) as
    this session's job, with the session's model, limits and few-shot examples; ``summary``
    adds the result summary step after the run (:mod:`agents.runs.result_summary`). Reading
    ahead stops, but for what a new run with ``params`` reads first."""
    llm = _client()
    if llm is None:
        return
    ui_warmup.before_run(pipeline, db_key, db, params)
    limits = ui_state.exec_limits()
    services = ui_services.example_services(db)

    def stream(control):
        run_items = items(llm, limits, services, control)
        return with_summary(run_items, llm, control) if summary else run_items

    st.session_state[JOB] = run_job(pipeline.name, stream, _saver())
    st.session_state[JOB_DB] = db_key
    st.session_state.pop(RUN, None)  # the previous run leaves the page (it is in History)
    st.session_state.pop(RUN_DB, None)


def _resume(run, db_key: str, request: ui_resume.ResumeRequest) -> None:
    db = ui_databases.resolve(db_key)
    if db is None:
        st.error(f"The database '{md_text(run.db_name)}' is not available in this session any more, so "
                 "the run cannot be resumed.")
        return
    try:
        pipeline = get_pipeline(run.pipeline)
    except KeyError as exc:
        st.error(str(exc))
        return
    summarized = any(is_summary(e) for e in run.events)
    # the summary follows the run's own steps; the pipeline resumes from those only
    own = dataclasses.replace(run, events=pipeline_events(run))
    _launch(pipeline, db_key, db, lambda llm, limits, services, control: resume_run(
        pipeline, own, request.from_index, db, llm, data=request.data, limits=limits,
        control=control, services=services),
        summary=summarized)  # a re-run is summarized when its run was


def _stale_question_box(was_running: bool, db_key: str | None) -> bool:
    """Whether the question box, drawn earlier in this script run, no longer matches the page:
    Run was disabled for a job that has ended, or the run it offers to follow up on is not the
    one that has just finished (a run can end before the page reaches this point, or while its
    steps are drawn)."""
    previous = _previous_run(db_key)
    now = previous.run_id if previous is not None else None
    return was_running or now != st.session_state.get(BOX_SAW)


def _expand_toggle() -> bool:
    st.session_state.setdefault("ask_expand_steps", True)
    return st.toggle("Show step details", key="ask_expand_steps",
                     help="Open every step's block; switch off for a compact list of steps.")


def _question_box(db_key: str | None, db, running: bool) -> None:
    pipelines = list_pipelines()
    if not pipelines:
        st.error("No pipeline is installed.")
        return
    examples = ui_databases.examples_for(db_key)
    if examples:
        st.selectbox("Example questions", [q["question"] for q in examples], index=None,
                     placeholder="Pick an example to fill the question…", key="ask_example",
                     on_change=_fill_example)
    st.text_area("Question", key="ask_question", height=90,
                 placeholder="e.g. Which five products sold the most units in 2024?")
    st.text_input("Evidence / hint (optional)", key="ask_evidence",
                  help="Knowledge the model cannot see in the schema, e.g. "
                       "'revenue = quantity * unit_price' or 'active means status = 1'. "
                       "Knowledge that holds for every question belongs on the Knowledge page.")
    previous = _previous_run(db_key)
    ui_conversation.context_controls(db, previous)
    ui_conversation.summary_control()
    # what the follow-up box was drawn for: a run that ends later in this script run changes it
    st.session_state[BOX_SAW] = previous.run_id if previous is not None else None
    names = [p.name for p in pipelines]
    if st.session_state.get("ask_pipeline") not in names:
        st.session_state["ask_pipeline"] = ui_preferences.default_pipeline(names)
    name = st.selectbox("Pipeline", names, key="ask_pipeline", format_func=pipeline_label,
                        help="How the agents work on the question; the default is set on the "
                             "Settings page.")
    pipeline = get_pipeline(name)
    if pipeline.description:
        st.caption(pipeline.description + (f" — {pipeline.paper}" if pipeline.paper else ""))
    params = {}
    if pipeline.params:
        with st.expander(f"Parameters of {pipeline_label(pipeline)}"):
            params = ui_params.param_widgets(pipeline, ui_state.pipeline_defaults(pipeline),
                                             "ask_param")
    warming = None if running else ui_warmup.prepare(pipeline, db_key, db, params)
    if st.button("Run", type="primary", disabled=running or db is None, key="ask_run_button"):
        question = (st.session_state.get("ask_question") or "").strip()
        evidence = (st.session_state.get("ask_evidence") or "").strip()
        if not question:
            st.error("Type a question first.")
        else:
            _start(pipeline, db_key, db, question, evidence, params)
            if _active_job() is not None and not _active_job().finished:
                st.rerun()  # draw the page again as it is now: Run disabled, Stop shown
    else:
        ui_warmup.show(warming)


run_through_app()
st.title("Ask a question")
job = _active_job()
running = job is not None and not job.finished

left, right = st.columns([2, 3], gap="large")
with left:
    db_key, db = database_picker("ask")
    if db is not None:
        database_summary(db)
with right:
    _question_box(db_key, db, running)

# A running job and the finished run each have their own slot. A slot with nothing to draw in a
# script run is left as it is, empty, which removes what it showed at once: a new run replaces the
# previous one's steps, answer and chart instead of leaving them faded under it (the previous
# run stays in History). One slot reused for both would keep the old elements until the new
# run's script run ends.
live_slot, run_slot = st.empty(), st.empty()
job = _active_job()
drawn_live = False
if job is not None:
    with live_slot.container():
        st.divider()
        draft_slot = st.empty()  # the answer so far, above the steps (candidate selection)
        st.subheader("Agent steps")
        expand = _expand_toggle()
        if not job.finished:
            stop_slot = st.empty()
            stop_slot.button("Stop the run", key="ask_stop", on_click=_stop,
                             help="Stop now; a model call in flight is abandoned, the steps so far "
                                  "are kept.")
            pane = DraftPane(draft_slot)
            live.follow(job, expanded=expand, on_event=pane.update, scroll=True)
            stop_slot.empty()
            drawn_live = True
        finished = live.settle(job, JOB)
        if finished is not None:
            if not drawn_live:  # it ended while nobody watched (stopped, or another page shown)
                pane = DraftPane(draft_slot)
                for event in finished.events:
                    pane.update(event)
                st.caption(f"“{md_text(finished.question)}” on {md_text(finished.db_name)} "
                           f"with {finished.pipeline}")
                ui_trace.render_trace(finished.events, expanded=expand,
                                      originals=originals_for(finished))
                drawn_live = True
            st.session_state[RUN] = finished
            st.session_state[RUN_DB] = st.session_state.get(JOB_DB)
            if getattr(finished, "run_id", None):
                # draw the page again answer first, and bring the answer into view there
                st.session_state[SCROLL_TO_ANSWER] = finished.run_id
                st.session_state[JOB_NOTES] = [("error", job.failure),
                                               ("warning", job.save_error)]
                st.rerun()
        if _stale_question_box(running, db_key):
            # The question box above was drawn while the run went on (Run disabled, no "Follow
            # up on …"): draw the page once more as it is now, keeping what settle reported.
            st.session_state[JOB_NOTES] = [("error", job.failure), ("warning", job.save_error)]
            st.rerun()

notes = [(level, note) for level, note in st.session_state.pop(JOB_NOTES, None) or [] if note]
if notes and job is None:
    with live_slot.container():
        for level, note in notes:
            getattr(st, level)(md_text(note))

run = st.session_state.get(RUN)
if run is not None:
    with run_slot.container():
        run_db_key = st.session_state.get(RUN_DB)
        if not drawn_live:
            # answer first: the result (and its summary in words), then how the agents got there
            st.divider()
            answer_pane(run, run_db_key)
            if st.session_state.pop(SCROLL_TO_ANSWER, None) == run.run_id:
                ui_scroll.to_anchor("answer", run.run_id)
            st.divider()
            st.subheader("Agent steps")
            expand = _expand_toggle()
            st.caption(f"“{md_text(run.question)}” on {md_text(run.db_name)} with {run.pipeline}")
            ui_conversation.thread_panel(run)
            ui_conversation.context_panel(run)
            ui_trace.render_trace(run.events, expanded=expand, originals=originals_for(run))
            ui_trace.render_graph(run)
        else:
            ui_conversation.thread_panel(run)
            ui_conversation.context_panel(run)
            ui_trace.render_graph(run)
            answer_pane(run, run_db_key)
        run_db = ui_databases.resolve(run_db_key)
        request = ui_resume.edit_and_resume(run, run_db.schema if run_db is not None else None)
        if request is not None:
            _resume(run, run_db_key, request)
            if _active_job() is not None:
                st.rerun()
