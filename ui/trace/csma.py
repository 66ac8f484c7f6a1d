"""Views of CSMA's output kinds: who owns which tables, and each round's extraction, check and
SQL of one agent, and the global writer after rounds that ended on failing SQL."""

from __future__ import annotations

import streamlit as st

from agents.pipelines.csma.outputs import (AgentSQL, GlobalWriterSQL, SchemaExtraction,
                                          SchemaPartition, SQLCheck)
from agents.db.sqltext import format_sql

from . import view
from .parts import (badge, cell, markdown_table, name, names, rewritten_note,
                    round_prefix, schema_table, text, writer_repair_notes)

_POSITIVE = {"positive", "correct", "right", "yes", "true", "ok", "valid", "pass"}


@view(SchemaPartition.kind)
def render_partition(partition: SchemaPartition) -> None:
    """Which agent owns which tables: the private schemas CSMA's agents start from."""
    if partition.partition:
        st.markdown(f"**Partition:** {text(partition.partition)}")
    markdown_table(["agent", "tables (private schema)", "columns"],
                   [[f"**{cell(a['agent'])}**", names(a["tables"]), str(a.get("columns", ""))]
                    for a in partition.agents])
    if partition.private_schemas:
        with st.expander("Every agent's private columns"):
            markdown_table(["agent", "table", "columns"],
                           [[cell(r["agent"]), name(r["table"]), names(r["columns"])]
                            for r in partition.private_schemas])


@view(SchemaExtraction.kind)
def render_extraction(step: SchemaExtraction) -> None:
    """Known schema -> what the agent extracted (retention, join columns and whole tables
    marked) -> global schema after it."""
    agent = step.agent or "The agent"
    st.markdown(f"{round_prefix(step.round)}{text(agent)} merges its private schema with the "
                "global schema and extracts what the question needs.")
    private = {r["table"] for r in step.private_schema}
    # the compact variant: the agent named these tables, and each is kept with every column
    whole = {r["table"]: " (whole)" for r in step.extracted if r.get("whole_table")}
    marks: dict[tuple[str, str], str] = {}
    for row in step.extracted:
        if row["table"] in whole:
            continue
        for column in row.get("added_for_joins") or []:
            marks[(row["table"], column)] = " (join)"
        for column in row.get("added_for_retention") or []:
            marks[(row["table"], column)] = " (δ)"
    from_global = [r["table"] for r in step.known_schema
                   if private and r["table"] not in private]
    known, extracted, shared = st.columns(3)
    with known:
        st.markdown(f"**Known schema** of {text(agent)}")
        schema_table(step.known_schema, table_marks={t: " (global)" for t in from_global})
    with extracted:
        st.markdown("**Extracted**")
        schema_table([{"table": r["table"], "columns": r["columns"]} for r in step.extracted],
                     marks, table_marks=whole)
    with shared:
        st.markdown("**Global schema** after this step")
        schema_table(step.global_schema)
    legend = ["(global): known from the global schema, not privately owned"] if from_global \
        else []
    if whole:
        legend.append("(whole): the agent named the table, and every column it knows is kept")
    if any(m == " (δ)" for m in marks.values()):
        legend.append("(δ): added by the retention threshold")
    if any(m == " (join)" for m in marks.values()):
        legend.append("(join): kept so the extracted tables can be joined")
    if legend:
        st.caption(" · ".join(legend))


@view(SQLCheck.kind)
def render_check(check: SQLCheck) -> None:
    """The check's verdict on the previous round's SQL, its reason and what execution showed."""
    positive = str(check.verdict).strip().lower() in _POSITIVE
    verdict = (badge("positive: SQL accepted", "green") if positive
               else badge("negative: SQL rejected", "red"))
    author = f" written by {text(check.sql_by)}" if check.sql_by else ""
    st.markdown(f"{round_prefix(check.round)}{text(check.agent or 'The agent')} checks the "
                f"SQL{author}: {verdict}")
    if check.reason:
        st.markdown(f"**Reason:** {text(check.reason)}")
    execution = check.execution
    if isinstance(execution, dict):
        execution = ("ran without error" if execution.get("ok")
                     else f"failed: {execution.get('error') or 'unknown error'}")
    if execution:
        st.caption(f"Execution, as the checker saw it: {text(execution)}")
    if check.sql:
        st.code(format_sql(check.sql), language="sql", wrap_lines=True)
    if check.own_sql:
        _render_own_sql(check)


def _render_own_sql(check: SQLCheck) -> None:
    """An agreement check: the checker's own SQL beside the checked one, and whether their
    results are the same."""
    if check.agrees is None:  # no result to compare with: the model's verdict decided
        # runs recorded before checks had ``own_runs`` are read from the outcome's text
        failed = (not check.own_runs if check.own_runs is not None
                  else str(check.own_execution or "").startswith("failed"))
        outcome = badge("its own SQL does not run: the model judged instead" if failed
                        else "without its unread join, both return no rows: the model judged "
                        "instead" if check.own_unread_joins
                        else "both return no rows: the model judged instead", "orange")
    elif check.agrees and check.own_unread_joins:
        outcome = badge("same result without a join it reads nothing of", "green")
    elif check.agrees:
        outcome = badge("same result", "green")
    else:
        outcome = badge("different result: its own SQL is the new SQL", "red")
    st.markdown(f"**Its own SQL**, written from its extracted schema: {outcome}")
    if check.own_rewrite and check.own_written_sql:
        rewritten_note("Its own SQL as the model wrote it", check.own_written_sql,
                       check.own_written_error, check.own_rewrite)
    if check.own_execution:
        st.caption(f"Its own SQL {text(check.own_execution)}")
    st.code(format_sql(check.own_sql), language="sql", wrap_lines=True)
    if check.own_unread_joins and check.own_compared_sql:
        st.caption(f"Compared without its join of {names(check.own_unread_joins)}: nothing in "
                   f"it reads that table's columns, so the join only repeats or drops rows")
        st.code(format_sql(check.own_compared_sql), language="sql", wrap_lines=True)


@view(AgentSQL.kind)
def render_agent_sql(step: AgentSQL) -> None:
    """The SQL an agent wrote from its extracted schema (told why its check rejected the last)."""
    source = f" from {names(step.tables)}" if step.tables else ""
    strategy = ("by sub-questions (MAC-SQL decomposition)"
                if step.strategy == "decompose" else "")
    st.markdown(f"{round_prefix(step.round)}{text(step.agent or 'The agent')} writes SQL"
                f"{source} {strategy}".rstrip())
    if step.written_in_check:
        st.caption("The SQL it wrote in its check, whose result differed (no new model call).")
    elif step.feedback:
        st.markdown(f"**Knows why the last SQL was rejected:** {text(step.feedback)}")
    for i, sub in enumerate(step.sub_questions or [], 1):
        st.markdown(f"{i}. {text(sub.get('question', ''))}")
    if step.executes is False:
        st.markdown(":orange[**The SQL fails to execute.**]")
    if step.rewrite and step.written_sql:
        rewritten_note("The SQL as the model wrote it", step.written_sql, step.written_error,
                       step.rewrite)
    st.code(format_sql(step.sql), language="sql", wrap_lines=True)


@view(GlobalWriterSQL.kind)
def render_global_writer(step: GlobalWriterSQL) -> None:
    """The rounds ended on SQL that fails (or, checking, on SQL that runs unchecked): one
    writer wrote afresh from the global schema; its SQL is the answer when it runs (checking:
    the agents' SQL with its result is, or, with none, its own when only it finds data)."""
    if step.mode == "check":
        st.markdown("The rounds ended on SQL that runs, but no check agreed with it. A writer "
                    f"reads the global schema ({names(step.tables)}), what the agents shared, "
                    "writes the SQL with the single prompt, and its result is compared with "
                    "that of every SQL the agents wrote, the last first.")
    else:
        failed = f" ({text(step.agents_error)})" if step.agents_error else ""
        st.markdown(f"The rounds ended on SQL that fails{failed}. A writer reads the global "
                    f"schema ({names(step.tables)}), what the agents shared, and writes the "
                    "SQL afresh with the single prompt.")
    if step.taken and step.mode != "check":
        with st.expander("The agents' SQL"):
            st.code(format_sql(step.agents_sql or ""), language="sql", wrap_lines=True)
    writer_repair_notes(step)
    if step.mode == "check":
        _render_global_check(step)
        return
    if step.taken:
        st.markdown(badge("its SQL runs: it is the answer", "green"))
        st.code(format_sql(step.sql), language="sql", wrap_lines=True)
        return
    if step.sql:
        st.markdown(badge("its SQL fails too", "orange"))
        st.code(format_sql(step.sql), language="sql", wrap_lines=True)
    else:
        st.markdown(badge("it wrote no SQL", "orange"))
    st.markdown("**The run keeps the agents' SQL:**")
    st.code(format_sql(step.agents_sql or ""), language="sql", wrap_lines=True)


def _render_global_check(step: GlobalWriterSQL) -> None:
    st.markdown("**The writer's SQL:**")
    st.code(format_sql(step.sql or ""), language="sql", wrap_lines=True)
    if step.agreed_sql and step.agrees_with_last:
        st.markdown(badge("the same result as the last SQL: it stays", "green"))
        return
    if step.agreed_sql:
        st.markdown(badge("the same result as an earlier SQL of the agents: it is the answer",
                          "blue"))
        st.code(format_sql(step.agreed_sql), language="sql", wrap_lines=True)
        with st.expander("The SQL the rounds ended on"):
            st.code(format_sql(step.agents_sql or ""), language="sql", wrap_lines=True)
        return
    if step.taken:
        st.markdown(badge("no SQL of the agents returns its result, and the last one finds no "
                          "data while the writer's does: the writer's SQL is the answer", "blue"))
        with st.expander("The SQL the rounds ended on"):
            st.code(format_sql(step.agents_sql or ""), language="sql", wrap_lines=True)
        return
    st.markdown(badge("no SQL of the agents returns its result: the last SQL stays", "orange"))
    st.code(format_sql(step.agents_sql or ""), language="sql", wrap_lines=True)
