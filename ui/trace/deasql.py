"""Views of DEA-SQL's own output kinds: elements, the filtered schema, classification, few-shot
generation, self-correction and active learning."""

from __future__ import annotations

import streamlit as st

from agents.pipelines.deasql import self_correction, sql_generation
from agents.pipelines.deasql.outputs import (ActiveLearning, Classification, Elements,
                                             FewShotGeneration, FilteredSchema, SelfCorrection)
from agents.db.sqltext import format_sql

from . import view
from .parts import badge, markdown_table, name, names, render_sql_change, text

_TYPES = ("EASY", "JOIN", "NESTED", "JOIN-NESTED")


@view(Elements.kind)
def render_elements(elements: Elements) -> None:
    """The question's entities and the rewritten question the later prompts think about."""
    st.markdown(f"**Entities:** {names(elements.entities)}")
    if elements.rewritten_question:
        st.markdown(f"**Rewritten question:** {text(elements.rewritten_question)}")


@view(FilteredSchema.kind)
def render_information_filter(filtered: FilteredSchema) -> None:
    """The tables and columns kept for the later agents, the join conditions, the key facts."""
    if filtered.tables:
        markdown_table(["table", "kept columns", "dropped columns"],
                       [[name(t["table"]), names(t.get("kept")), names(t.get("dropped"))]
                        for t in filtered.tables])
    elif not filtered.used:
        st.markdown("The whole schema is used (no table was filtered out).")
    joins = filtered.join_conditions
    if isinstance(joins, list):
        joins = "; ".join(map(str, joins))
    if joins and str(joins).strip().lower() not in ("none", "no", "n/a"):
        st.markdown(f"**Join conditions:** {name(' '.join(str(joins).split()))}")
    info = filtered.key_info or []
    if isinstance(info, dict):
        info = [f"{k}: {v}" for k, v in info.items()]
    if info:
        st.markdown("**Key information:**\n" + "\n".join(f"- {text(line)}" for line in info))


def prompt_line(question_type: str | None, variant: str | None = None) -> str:
    template, hint = sql_generation.prompt_hint(question_type, variant)
    said = f"hint “{text(hint)}”" if hint else "no hint"
    return f"**Generation prompt:** {name(template)} · {said}"


@view(Classification.kind)
def render_classification(classification: Classification) -> None:
    """The question type chosen and the generation prompt (hint) it selects."""
    if classification.question_type is None and not classification.label:
        st.markdown("Classification is off: every question gets the fixed JOIN hint.")
        st.markdown(prompt_line(None, classification.variant))
        return
    qtype = str(classification.question_type or "").strip().upper()
    label = f" ({text(classification.label)})" if classification.label else ""
    st.markdown(f"**Question type:** {badge(qtype or 'unknown', 'blue')}{label}")
    if qtype in _TYPES:
        st.markdown(prompt_line(qtype, classification.variant))
    if classification.reasoning:
        st.markdown(f"**Reasoning:** {text(classification.reasoning)}")


@view(FewShotGeneration.kind)
def render_generation(generation: FewShotGeneration) -> None:
    """Which prompt wrote the SQL and the few-shot examples it was shown."""
    qtype, template = generation.question_type, generation.template
    st.markdown(f"**Prompt:** {name(template) if template else '—'} · question type "
                f"{text(qtype) if qtype else '— (fixed hint)'}")
    if not generation.examples:
        st.caption("Zero-shot: no few-shot example was used.")
        return
    with st.expander(f"Few-shot examples used ({len(generation.examples)})"):
        for i, e in enumerate(generation.examples, 1):
            about = [x for x in (e.get("qtype"),
                                 f"similarity {e['score']:.2f}"
                                 if isinstance(e.get("score"), (int, float)) else None,
                                 f"accepted by {text(e['author'])}" if e.get("author")
                                 else None) if x]
            st.markdown(f"**{i}. {text(e.get('question'))}**"
                        + (f" · {' · '.join(about)}" if about else ""))
            st.code(format_sql(e.get("sql")), language="sql", wrap_lines=True)


@view(SelfCorrection.kind)
def render_self_correction(correction: SelfCorrection) -> None:
    """The checklist's outcome: no issue, a correction taken, or a correction refused."""
    if correction.kept_before:
        outcome = badge("correction refused: it fails to run, the SQL before it is kept",
                        "orange")
    elif correction.changed:
        outcome = badge("issue found: SQL corrected", "orange")
    else:
        outcome = badge("no issue found", "green")
    st.markdown(f"**Checklist outcome:** {outcome}")
    render_sql_change(correction.sql_before, correction.sql_after)
    checklist = self_correction.checklist()
    if checklist:
        with st.expander("The checklist"):
            st.markdown("\n".join(f"{i}. {text(item)}" for i, item in enumerate(checklist, 1)))


@view(ActiveLearning.kind)
def render_active_learning(learning: ActiveLearning) -> None:
    """Whether the error cases' rewrite (MAX/MIN subquery -> ORDER BY ... LIMIT 1) was applied."""
    extremum = {True: "yes", False: "no", None: "not said"}.get(learning.extremum, "—")
    state = badge("applied", "green") if learning.applied else badge("not applied", "gray")
    st.markdown(f"{state} {text(learning.reason)}")
    st.caption(f"Extremum problem, by the model's judgement: {extremum}")
    render_sql_change(learning.sql_before, learning.sql_after)
