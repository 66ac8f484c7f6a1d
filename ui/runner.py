"""Runs a pipeline in a worker thread and shows its steps live, surviving Streamlit reruns.

Why a thread: a Streamlit script run is interrupted whenever the user touches a widget. If the
pipeline ran inside the script, any click would abandon it half-way (and the next rerun would have
to call the model again). Here the engine's item stream is drained by a worker thread into a
:class:`RunJob` kept in ``st.session_state``; every script run just *draws* what the job has
produced so far and keeps polling while it is running, so reruns never call the model again.

Stop sets the job's ``threading.Event`` (the engine checks it before every model call and every
step) and detaches at once: the run is finalized as ``stopped`` from the steps finished so far,
while the call in flight, if any, completes in the background and is discarded.
"""

from __future__ import annotations

import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Callable, Iterator

import streamlit as st

from agents.engine import Pipeline
from agents.events import Run, RunFinished, StepEvent, StepStarted

from ui import trace as ui_trace

POLL_S = 0.25


@dataclass
class RunJob:
    """One pipeline run in progress (or just finished) for one browser session."""

    pipeline: Pipeline
    question: str
    db_key: str
    db_name: str
    evidence: str = ""
    params: dict = field(default_factory=dict)
    model: str = ""
    parent_run_id: str | None = None
    resumed_from: int | None = None
    base_events: list[StepEvent] = field(default_factory=list)  # kept steps of a resumed run
    items: list = field(default_factory=list)
    cancel: threading.Event = field(default_factory=threading.Event)
    run: Run | None = None
    failure: str | None = None  # the worker itself crashed (not a failed step)
    save_error: str | None = None
    detached: bool = False
    started_at: float = field(default_factory=time.time)
    thread: threading.Thread | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)  # worker vs. Stop

    @property
    def finished(self) -> bool:
        return self.run is not None or self.failure is not None


def start_job(job: RunJob, items: Callable[[], Iterator], save: Callable[[Run], None]) -> RunJob:
    """Start draining ``items()`` (a ``start_run``/``resume_run`` call) in a daemon thread.

    ``save`` stores the finished run; it is called by the worker, so a run is saved even when
    the user has navigated to another page by the time it ends.
    """
    def work() -> None:
        try:
            for item in items():
                with job.lock:
                    if job.detached:
                        return
                    job.items.append(item)
                    if isinstance(item, RunFinished):
                        job.run = item.run
        except Exception as exc:  # the engine turns step failures into events; this is a bug
            job.failure = f"The run crashed: {exc.__class__.__name__}: {exc}"
            traceback.print_exc()
            return
        with job.lock:
            finished_here = job.run is not None and not job.detached
        if finished_here:
            _save(job, save)

    job.thread = threading.Thread(target=work, name=f"run-{job.pipeline.name}", daemon=True)
    job.thread.start()
    return job


def _save(job: RunJob, save: Callable[[Run], None]) -> None:
    try:
        save(job.run)
    except Exception as exc:
        job.save_error = f"The run finished but could not be saved to the store: {exc}"


def stop_job(job: RunJob, save: Callable[[Run], None]) -> Run:
    """Ask the engine to stop and finalize the run as ``stopped`` without waiting for the model."""
    job.cancel.set()
    if job.thread is not None:
        job.thread.join(timeout=0.5)  # a step between model calls stops almost at once
    with job.lock:
        if job.run is not None:
            return job.run
        job.detached = True
    kept = list(job.base_events)
    all_events = kept + [i for i in list(job.items) if isinstance(i, StepEvent)]
    data = all_events[-1].data if all_events else {}
    try:
        final_sql = job.pipeline.final_sql(data) if data else None
    except Exception:
        final_sql = None
    job.run = Run(pipeline=job.pipeline.name, question=job.question, db_name=job.db_name,
                  evidence=job.evidence, params=dict(job.params), model=job.model,
                  events=all_events, status="stopped", error="stopped by the user",
                  final_sql=final_sql, started_at=job.started_at, finished_at=time.time(),
                  parent_run_id=job.parent_run_id, resumed_from=job.resumed_from)
    _save(job, save)
    return job.run


def follow(job: RunJob, *, expanded: bool = True) -> None:
    """Draw the job's steps as they happen and return when it has finished.

    Earlier steps (from before a rerun) are drawn at once; the running step is an open
    ``st.status`` whose label counts the seconds, which also gives Streamlit a chance to
    interrupt this loop when the user clicks something.
    """
    if job.base_events:
        ui_trace.render_trace(job.base_events, expanded=expanded)
    blocks: dict[int, tuple] = {}
    seen = 0
    while True:
        done = job.finished  # read before the items, so no item appended meanwhile is missed
        items = job.items[seen:]
        seen += len(items)
        for item in items:
            if isinstance(item, StepStarted):
                block = st.status(ui_trace.running_label(item), state="running", expanded=True)
                slot = block.empty()
                slot.caption("Working… (the model may take a while on a CPU)")
                blocks[item.index] = (block, slot, item, time.time())
            elif isinstance(item, StepEvent):
                block, slot, _, _ = blocks.pop(item.index, (None, None, None, None))
                if block is None:
                    block = st.status(ui_trace.done_label(item), state="running")
                    slot = block.empty()
                with slot.container():
                    ui_trace.render_event(item)
                block.update(label=ui_trace.done_label(item), state=ui_trace.status_state(item),
                             expanded=expanded or item.status == "error")
        if done:
            for block, _, started, _ in blocks.values():  # a step cut short by a stop or crash
                block.update(label=ui_trace.running_label(started).replace("running…", "stopped"),
                             state="error")
            return
        for block, _, started, since in blocks.values():
            block.update(label=ui_trace.running_label(started, time.time() - since),
                         expanded=True)
        time.sleep(POLL_S)
