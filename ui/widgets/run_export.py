""""Export this run": one run as a Markdown or HTML report, built only when clicked.

The report (see :mod:`agents.runs.run_report`) is the one ``python -m agents run export`` writes: it
reads the run's annotation, accepted answer and the original state of any edited step from the
store, and a run not stored (yet) is reported from what the page holds.
"""

from __future__ import annotations

import streamlit as st

from agents.core.events import Run
from agents.runs.run_report import run_report, stored_run_report
from agents.core.state_diff import original_states

from ui import services as ui_services

_MIME = {"md": "text/markdown", "html": "text/html"}
_LABEL = {"md": "Export this run (Markdown)", "html": "Export this run (HTML)"}


def report_text(run: Run, fmt: str) -> str:
    """The report of ``run`` in ``fmt`` ("md" or "html"); a failure becomes the file's text."""
    try:
        store = ui_services.store()
        try:
            return stored_run_report(store, run.run_id, fmt)
        except LookupError:
            return run_report(run, fmt, originals=original_states(run, store.get_run))
    except Exception as exc:  # the file then says why, instead of the page showing a trace
        return f"The report of run {run.run_id} could not be built: {exc}\n"


def export_buttons(run: Run, key: str) -> None:
    """Two download buttons, Markdown and HTML, for ``run``."""
    row = st.container(horizontal=True)  # each button as wide as its label: none is cut short
    for fmt in ("md", "html"):
        row.download_button(_LABEL[fmt], lambda fmt=fmt: report_text(run, fmt),
                               file_name=f"run_{run.run_id}.{fmt}", mime=_MIME[fmt],
                               key=f"report_{fmt}_{key}", on_click="ignore")
