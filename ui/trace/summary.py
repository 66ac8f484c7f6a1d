"""The view of the result summary (:mod:`agents.runs.result_summary`): the paragraph itself, then how
much of the result it was written from."""

from __future__ import annotations

import streamlit as st

from agents.outputs import ResultSummary
from ui.format import md_text

from . import view


@view("result_summary")
def render_summary(output: ResultSummary) -> None:
    st.markdown(md_text(output.summary))
    if output.row_count is not None and output.rows_shown is not None:
        seen = (f"Written from the first {output.rows_shown} of {output.row_count} row(s)"
                if output.rows_shown < output.row_count
                else f"Written from all {output.row_count} row(s)")
        cut = "; the result was cut by a limit" if output.truncated else ""
        st.caption(f"{seen}{cut}. Check it against the result table: the model may misread it.")
