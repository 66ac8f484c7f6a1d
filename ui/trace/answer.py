"""The view of the answerability check (:mod:`agents.answer.opening`): the question's words no
table or column names, and what the model said."""

from __future__ import annotations

import streamlit as st

from agents.answer.opening import Answerability
from ui.format import md_text

from . import view


@view("answerability")
def render_answerability(output: Answerability) -> None:
    words = ", ".join(output.words) or "none"
    st.caption(md_text(f"No table or column is named by the question's words ({words}); the "
                       "model was asked whether the database can answer it."))
    if output.answerable:
        st.markdown("**Answerable**: the run goes on to the pipeline's first step.")
    else:
        st.markdown(md_text(f"**Not answerable**: {output.statement}"))
    if output.reply:
        st.caption(md_text(f"The model replied: {output.reply}"))
