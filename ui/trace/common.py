"""Views of the output kinds several pipelines share: a SQL draft, a schema selection, a
decomposition, a repair, an execution check, the values found in the data, the writer afresh, the
Final check."""

from __future__ import annotations

import streamlit as st

from agents.outputs import (Decomposition, ExecutionCheck, FreshSQL, SchemaSelection, SQLDraft,
                            SQLRepair, ValueMatches)
from agents.rules.final_check import FinalCheck
from agents.db.sqltext import format_sql

from . import view
from .parts import (badge, cell, error_line, markdown_table, name, names, prose,
                    render_sql_change, repaired_by_note, rewritten_note, round_prefix, text,
                    writer_repair_notes)

_DECISIONS = {"keep_all": "keep all columns", "drop_all": "dropped", "columns": "keep some columns"}
_STYLES = {"cot": "chain of thought", "pot": "program of thoughts",
           "direct": "SQL only (compact variant)"}


@view(SQLDraft.kind)
def render_draft(draft: SQLDraft) -> None:
    """A writer's draft: the prompt style and its examples, the reasoning before the SQL."""
    bits = [f"writing style: {_STYLES.get(draft.style, draft.style)}"] if draft.style else []
    if draft.examples is not None:
        bits.append(f"{draft.examples} related example(s)")
    if bits:
        st.caption(" · ".join(bits))
    if draft.reasoning and draft.reasoning.strip() != (draft.sql or "").strip():
        st.markdown(f"**Reasoning:** {prose(draft.reasoning)}")


@view(SchemaSelection.kind)
def render_selection(selection: SchemaSelection) -> None:
    """Which tables and columns the Selector kept."""
    if not selection.used and not selection.tables:
        st.caption("Every table was kept (the Selector did not prune the schema).")
    # A Markdown table, not a dataframe: a list of columns wraps in full instead of being cut
    # at the cell's edge, and every table shows without an inner scroll.
    rows = [[name(t.get("table", "")),
             cell(_DECISIONS.get(t.get("decision"), t.get("decision") or "")),
             names(t.get("kept")), names(t.get("dropped"))]
            for t in selection.tables]
    if rows:
        markdown_table(["table", "decision", "kept columns", "dropped columns"], rows)


@view(Decomposition.kind)
def render_decomposition(decomposition: Decomposition) -> None:
    """The sub-questions, each with the SQL that answers it."""
    for i, sub in enumerate(decomposition.sub_questions, 1):
        st.markdown(f"**{i}. {text(sub.get('question', ''))}**")
        if sub.get("sql"):
            st.code(format_sql(sub["sql"]), language="sql", wrap_lines=True)


@view(SQLRepair.kind)
def render_repair(repair: SQLRepair) -> None:
    """The execution error an agent saw and the SQL it produced from it."""
    if repair.status == "ok":
        st.markdown(f"The SQL runs and returns {repair.rows or 0:,} row(s): nothing to repair.")
    elif repair.status == "gave_up":
        st.markdown("**Gave up repairing** — the last SQL is kept.")
    elif repair.status == "rewritten":
        rewritten_note("The repair loop ended on SQL that", repair.written_sql or "",
                       repair.written_error, repair.rewrite or "")
        st.code(format_sql(repair.sql_after or ""), language="sql", wrap_lines=True)
        return
    if repair.error:
        attempt = f" · attempt {repair.attempt}" if repair.attempt else ""
        st.markdown(error_line("Error", repair.error, repair.error_class, attempt))
        if repair.hint:
            st.caption(f"Hint given with the error: {text(repair.hint)}")
    repaired_by_note(repair.from_hint, repair.rewrite)
    if repair.sql_before or repair.sql_after:
        render_sql_change(repair.sql_before, repair.sql_after)
    if repair.reasoning:
        st.markdown(f"**Reasoning:** {prose(repair.reasoning)}")


@view(ExecutionCheck.kind)
def render_execution_check(check: ExecutionCheck) -> None:
    """Whether the SQL runs, and each repair made from a failure."""
    for r in check.repairs:
        kind = f" ({text(r['error_class'])})" if r.get("error_class") else ""
        st.markdown(f"**Repair {r.get('attempt', '')}** · error{kind}: {text(r.get('error'))}")
        repaired_by_note(r.get("from_hint"), r.get("rewrite"))
        render_sql_change(r.get("sql_before"), r.get("sql_after"))
    if check.rewrite:
        rewritten_note(f"{round_prefix(check.round)}The repair loop ended on SQL that",
                       check.written_sql or "", check.written_error, check.rewrite)
    elif check.refused:
        st.markdown(f"{round_prefix(check.round)}{badge('revision not adopted', 'orange')} "
                    "the SQL before it, below, is final")
        if not check.ok and check.error:
            kind = f" ({text(check.error_class)})" if check.error_class else ""
            st.markdown(f"{badge('the revision fails', 'red')}{kind}: {text(check.error)}")
    elif check.ok and check.repairs:
        st.markdown(badge(f"runs after {len(check.repairs)} repair(s)", "green"))
    elif check.ok and check.round is not None:
        st.markdown(f"{round_prefix(check.round)}{badge('the SQL runs', 'green')}")
    elif not check.ok and check.error:
        kind = f" ({text(check.error_class)})" if check.error_class else ""
        attempt = f" · failure {check.attempt}" if check.attempt else ""
        st.markdown(f"{badge('fails', 'red')}{attempt}{kind}: {text(check.error)}")


@view(ValueMatches.kind)
def render_value_matches(found: ValueMatches) -> None:
    """The question's words found among the stored values, as the writers were told."""
    if found.matches:
        st.markdown(f"**{len(found.matches)} stored value(s) match the question**, shown to "
                    f"{text(found.shown_to)}.")
        markdown_table(["the question says", "stored value", "column", "match"],
                       [[cell(m.get("phrase")), name(m.get("value")),
                         name(f"{m.get('table')}.{m.get('column')}"), cell(m.get("how"))]
                        for m in found.matches])
    else:
        st.markdown("No stored value matches the question's words.")
    bits = [f"{len(found.phrases)} phrase(s) looked up in {found.where()}"]
    if found.seconds is not None:
        bits.append(f"{found.seconds:.2f} s")
    if found.dropped:
        bits.append(f"{found.dropped} further match(es) left out")
    if found.skipped:
        reasons = sorted({str(s.get("reason", "")).split(" (")[0] for s in found.skipped} - {""})
        bits.append(f"{len(found.skipped)} column(s) or step(s) not searched"
                    + (f" ({', '.join(reasons)})" if reasons else ""))
    st.caption(" · ".join(bits))


@view(FreshSQL.kind)
def render_fresh_sql(step: FreshSQL) -> None:
    """The repairs ended on SQL that fails: one writer wrote the SQL afresh from the run's
    schema; its SQL is the answer when it runs, else the run ends as the repairs left it."""
    failed = f" ({text(step.failed_error)})" if step.failed_error else ""
    st.markdown(f"The repairs ended on SQL that fails{failed}. A writer reads the run's schema "
                "and writes the SQL afresh with the single prompt, without the failing SQL.")
    with st.expander("The SQL the repairs ended on"):
        st.code(format_sql(step.failed_sql or ""), language="sql", wrap_lines=True)
    writer_repair_notes(step)
    if step.taken:
        st.markdown(badge("its SQL runs: it is the answer", "green"))
    elif step.sql:
        st.markdown(badge("its SQL fails too: the run ends as the repairs left it", "orange"))
    else:
        st.markdown(badge("it wrote no SQL: the run ends as the repairs left it", "orange"))
    if step.sql:
        st.code(format_sql(step.sql), language="sql", wrap_lines=True)


@view(FinalCheck.kind)
def render_final_check(check: FinalCheck) -> None:
    """What the Final check mended in the final SQL, and why; or why the SQL was kept."""
    if check.kept:
        st.markdown(f"{badge('kept as it was', 'gray')} {text(check.kept)}")
        render_sql_change(check.sql_before, check.sql_after)
        return
    apart = check.apart or []
    unread = [t for t in check.unread_tables() if t not in apart]
    by_key = [t for t in check.by_key or [] if t not in apart]
    if unread:
        st.markdown(f"{badge('join left out', 'blue')} The final SQL joined "
                    f"{names(unread)}, which nothing in it reads (its columns appear at most "
                    "in the join's own condition; a condition that names none of them stays, "
                    "as a filter) and the question does not name: such a join only drops rows "
                    "without a match and repeats the others.")
    if by_key:
        st.markdown(f"{badge('join left out', 'blue')} The final SQL joined "
                    f"{names(by_key)} and read only its join key, which the join makes "
                    "equal to a column of the table it was joined to: that column is read "
                    "instead, and the join, which the question does not name, is left out.")
    if apart:
        st.markdown(f"{badge('join left out', 'blue')} The final SQL joined {names(apart)}, "
                    "which the question names but which no foreign key links to the query's "
                    "other tables: another application's table in the same database. Nothing "
                    "reads it but through its join, so the join is left out.")
    if check.values:
        pairs = ", ".join(f"{name(written)} as {name(stored)}"
                          for written, stored in check.values)
        st.markdown(f"{badge('written as stored', 'blue')} The column holds no such value but "
                    f"one equal to it but for case: {pairs}.")
    st.markdown(f"The run ends on the mended SQL "
                f"({check.rows if check.rows is not None else '?'} row(s)).")
    render_sql_change(check.sql_before, check.sql_after)
