"""Draws a job's steps as they happen, for a single run (Ask) or several pipelines (Compare).

The job (:mod:`agents.jobs`) collects the engine's items in a worker thread; this draws them and
polls until the job ends. Earlier steps (from before a rerun) are drawn at once; a running step is
an open ``st.status`` whose label counts the seconds, which also gives Streamlit a chance to
interrupt the loop when the user clicks something.
"""

from __future__ import annotations

import time

import streamlit as st

from agents.events import StepEvent, StepStarted
from agents.jobs import Job

from ui import trace as ui_trace

POLL_S = 0.25


def follow(job: Job, *, expanded: bool = True, columns: dict | None = None,
           details: bool = True) -> None:
    """Draw the job's steps and return when it has finished.

    ``columns`` maps pipeline names to the containers their steps go in (Compare); without it
    every step goes on the page. ``details`` draws each finished step's body, not only its label.
    For a resumed run the steps it kept from its parent are drawn first.
    """
    run = job.control.run
    kept = run.events[: run.resumed_from] if run is not None and run.resumed_from else []
    if kept:
        ui_trace.render_trace(kept, expanded=expanded)
    blocks: dict[tuple[str, int], tuple] = {}
    seen = 0
    while True:
        done = job.finished  # read before the items, so no item appended meanwhile is missed
        items = job.items[seen:]
        seen += len(items)
        for source, item in items:
            where = columns.get(source) if columns is not None else st
            if where is None:
                continue
            if isinstance(item, StepStarted):
                block = where.status(ui_trace.running_label(item), state="running",
                                     expanded=details)
                slot = block.empty()
                if details:
                    slot.caption("Working… (the model may take a while on a CPU)")
                blocks[(source, item.index)] = (block, slot, item, time.time())
            elif isinstance(item, StepEvent):
                block, slot, _, _ = blocks.pop((source, item.index), (None, None, None, None))
                if block is None:
                    block = where.status(ui_trace.done_label(item), state="running")
                    slot = block.empty()
                if details:
                    with slot.container():
                        ui_trace.render_event(item)
                block.update(label=ui_trace.done_label(item), state=ui_trace.status_state(item),
                             expanded=details and (expanded or item.status == "error"))
        if done:
            for block, _, started, _ in blocks.values():  # a step cut short by a stop or crash
                block.update(label=ui_trace.running_label(started).replace("running…", "stopped"),
                             state="error")
            return
        for block, _, started, since in blocks.values():
            block.update(label=ui_trace.running_label(started, time.time() - since))
        time.sleep(POLL_S)


def settle(job: Job, key: str) -> object | None:
    """A finished job leaves the page's state (``key``); say what went wrong, if anything, and
    return its result (a Run or a ComparisonResult) for the page to keep."""
    st.session_state.pop(key, None)
    if job.failure:
        st.error(job.failure)
    if job.save_error:
        st.warning(job.save_error)
    return job.result
