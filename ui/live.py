"""Draws a job's steps as they happen, for a single run (Ask) or several pipelines (Compare).

The job (:mod:`agents.core.jobs`) collects the engine's items in a worker thread; this draws them and
polls until the job ends. Earlier steps (from before a rerun) are drawn at once; a running step is
an open ``st.status`` whose label counts the seconds, which also gives Streamlit a chance to
interrupt the loop when the user clicks something. Inside it, what the step's model has written
so far grows as it writes (the raw text, and the SQL once a code block opens), or, while the
run waits for its turn at the shared model, how many runs are ahead.
"""

from __future__ import annotations

import re
import time

import streamlit as st

from agents.core.events import StepEvent, StepPartial, StepStarted
from agents.core.jobs import Job
from agents.llm.queue import waiting_message

from ui import scroll as ui_scroll
from ui import trace as ui_trace
from ui.format import md_text

POLL_S = 0.25
READING = "Reading the prompt… (on a CPU a long prompt can take a minute or more)"

# The last code block the model has opened (```sql, or a bare ```), closed or not yet.
_OPEN_BLOCK = re.compile(r"```[ \t]*(?:sql|sqlite)?[ \t]*\n(?P<body>(?:(?!```).)*)",
                         re.DOTALL | re.IGNORECASE)


def open_sql(text: str) -> str | None:
    """The SQL of the last code block in ``text``, even while it is still being written."""
    blocks = list(_OPEN_BLOCK.finditer(text))
    body = blocks[-1].group("body").strip() if blocks else ""
    return body or None


def draw_partial(slot, partial: StepPartial | None) -> None:
    """What a running step's model has written so far (or that it waits for its turn)."""
    with slot.container():
        if partial is not None and partial.waiting:
            st.caption(f"Queued: {waiting_message(partial.waiting)}.")
            return
        if partial is None or not partial.text:
            st.caption(READING)
            return
        retry = f" · try {partial.call}" if partial.call > 1 else ""
        st.caption(f"The model is writing… {len(partial.text):,} characters{retry}")
        st.code(partial.text, language=None, wrap_lines=True)
        sql = open_sql(partial.text)
        if sql:
            st.code(sql, language="sql")


def _running_label(started: StepStarted, since: float, partial: StepPartial | None) -> str:
    label = ui_trace.running_label(started, time.time() - since)
    if partial is not None and partial.waiting:
        label += f" · {waiting_message(partial.waiting)}"
    return label


def follow(job: Job, *, expanded: bool = True, columns: dict | None = None,
           details: bool = True, on_event=None, scroll: bool = False) -> None:
    """Draw the job's steps and return when it has finished.

    ``columns`` maps pipeline names to the containers their steps go in (Compare); without it
    every step goes on the page. ``details`` draws each finished step's body, not only its label.
    ``on_event`` is called with each finished step's event (the Ask page's draft answer);
    ``scroll`` brings each step into view as it starts (:mod:`ui.scroll`). For a resumed run the steps it kept from its parent are drawn first.
    """
    run = job.control.run
    kept = run.events[: run.resumed_from] if run is not None and run.resumed_from else []
    if kept:
        ui_trace.render_trace(kept, expanded=expanded)
    blocks: dict[tuple[str, int], tuple] = {}
    scroller = st.empty() if scroll else None
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
                    draw_partial(slot, None)
                blocks[(source, item.index)] = [block, slot, item, time.time(), None]
                if scroller is not None:
                    ui_scroll.to_last_step(scroller, f"{run.run_id if run else ''}-{item.index}")
            elif isinstance(item, StepEvent):
                block, slot, *_ = blocks.pop((source, item.index), (None, None))
                if block is None:
                    block = where.status(ui_trace.done_label(item), state="running")
                    slot = block.empty()
                if details:
                    with slot.container():
                        ui_trace.render_event(item)
                block.update(label=ui_trace.done_label(item), state=ui_trace.status_state(item),
                             expanded=details and (expanded or item.status == "error"))
                if on_event is not None:
                    on_event(item)
        if done:
            for block, _, started, *_ in blocks.values():  # cut short by a stop or crash
                block.update(label=ui_trace.running_label(started).replace("running…", "stopped"),
                             state="error")
            return
        for (source, index), entry in blocks.items():
            block, slot, started, since, shown = entry
            partial = job.partial(source, index)
            if details and partial is not shown:
                draw_partial(slot, partial)
                entry[4] = partial
            # The running step stays open while its text grows (an update without
            # ``expanded`` folds the block in the browser).
            block.update(label=_running_label(started, since, partial), expanded=details)
        time.sleep(POLL_S)


def settle(job: Job, key: str) -> object | None:
    """A finished job leaves the page's state (``key``); say what went wrong, if anything, and
    return its result (a Run or a ComparisonResult) for the page to keep."""
    st.session_state.pop(key, None)
    if job.failure:
        st.error(md_text(job.failure))
    if job.save_error:
        st.warning(md_text(job.save_error))
    return job.result
