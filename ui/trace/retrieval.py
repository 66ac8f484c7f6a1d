"""The Schema Retriever's view: the budget, the tables kept and why, what was left out."""

from __future__ import annotations

import streamlit as st

from agents.retrieval import SchemaRetrieval
from agents.retrieval.outputs import apart_sentence, first_sentence, kept_because

from ui.format import md_text

from . import view
from .parts import cell, markdown_table, name, names


@view(SchemaRetrieval.kind)
def render_retrieval(found: SchemaRetrieval) -> None:
    """Kept tables best first, each with its columns and the reason it was kept."""
    st.markdown(f"**Kept {len(found.kept)} of {found.tables:,} tables** "
                f"({found.columns:,} columns in the database): the schema text takes about "
                f"{found.tokens:,} of a {found.budget:,}-token budget; the whole schema would "
                f"take about {found.schema_tokens:,} (context {found.context:,} tokens).")
    rows = []
    for row in found.kept:
        columns = ("all" if row.get("columns") == row.get("of")
                   else f"{row.get('columns')} of {row.get('of')}")
        rows.append([name(row.get("table")), cell(columns), cell(kept_because(row)),
                     cell(f"{row.get('score', 0):.2f}")])
    markdown_table(["table", "columns", "kept because", "score"], rows)
    if found.dropped:
        shown = names(found.dropped_best[:10]) if found.dropped_best else ""
        st.caption(f"{found.dropped:,} table(s) left out" +
                   (f"; the best ranked of them: {shown}" if shown else ""))
    if found.apart:
        st.caption(f"{apart_sentence(found.apart)}: {names(found.apart[:10])}")
    if found.values:
        st.caption("Stored values the question names: " +
                   "; ".join(md_text(v) for v in found.values[:5]))
    if found.first:
        said = first_sentence(found.first)
        more = ", …" if len(found.first) > 12 else ""
        st.caption(f"{said[:1].upper()}{said[1:]}: {names(found.first[:12])}{more}")
