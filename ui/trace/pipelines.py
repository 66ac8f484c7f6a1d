"""How the DEA-SQL, R³ and CSMA agents' steps read on screen.

Each renderer turns one agent's ``StepEvent.parsed`` into what a person scans first: a verdict
badge, a short table of schemas, the question type and the prompt it picked, the SQL diff of a
revision. They are registered in :mod:`ui.trace` by agent name; a shape a renderer does not
expect raises, and the registry then falls back to the generic view, so an edited or older run
never breaks the page. Names (tables, columns, entities) are shown as code spans, free text is
escaped so a ``$`` or ``|`` in a model's comment cannot turn into math or a table cell.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any, Iterable

import streamlit as st

from ui.format import format_sql
from ui.trace import register, render_sql_change

# -- text helpers -------------------------------------------------------------------------------

def text(value: Any) -> str:
    """Free text safe for markdown: no LaTeX from ``$``, no line breaks inside a table cell."""
    return " ".join(str(value or "").split()).replace("$", "\\$")


def prose(value: Any) -> str:
    """Longer model text (reasoning, a rebuttal) with its line breaks and code fences kept."""
    return str(value or "").strip().replace("$", "\\$")


def cell(value: Any) -> str:
    return text(value).replace("|", "\\|")


def name(value: Any) -> str:
    """A table, column or entity name as a code span."""
    return "`" + str(value).replace("`", "'") + "`"


def names(values: Iterable[Any]) -> str:
    shown = [name(v) for v in values or []]
    return ", ".join(shown) if shown else "—"


def markdown_table(header: list[str], rows: list[list[str]]) -> None:
    """A small table that wraps long cells (a dataframe would cut a list of columns short)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    st.markdown("\n".join(lines))


def schema_table(rows: list[dict], marks: dict[tuple[str, str], str] | None = None,
                 table_marks: dict[str, str] | None = None) -> None:
    """``[{"table", "columns"}]`` as a two-column table; ``marks`` tag single columns."""
    marks = marks or {}
    table_marks = table_marks or {}
    body = []
    for row in rows:
        table = row["table"]
        columns = ", ".join(name(c) + marks.get((table, c), "") for c in row["columns"]) or "—"
        body.append([name(table) + table_marks.get(table, ""), columns])
    if body:
        markdown_table(["table", "columns"], body)
    else:
        st.caption("(empty)")


def badge(label: str, colour: str) -> str:
    return f":{colour}-badge[{cell(label).replace(']', ')')}]"


def round_prefix(parsed: dict) -> str:
    return f"**Round {parsed['round']}** · " if parsed.get("round") else ""


# -- CSMA ---------------------------------------------------------------------------------------

_POSITIVE = {"positive", "correct", "right", "yes", "true", "ok", "valid", "pass"}


@register("Schema owners")
def render_partition(parsed: dict) -> None:
    """Which agent owns which tables: the private schemas CSMA's agents start from."""
    if parsed.get("partition"):
        st.markdown(f"**Partition:** {text(parsed['partition'])}")
    markdown_table(["agent", "tables (private schema)", "columns"],
                   [[f"**{cell(a['agent'])}**", names(a["tables"]), str(a.get("columns", ""))]
                    for a in parsed["agents"]])
    private = parsed.get("private_schemas") or []
    if private:
        with st.expander("Every agent's private columns"):
            markdown_table(["agent", "table", "columns"],
                           [[cell(r["agent"]), name(r["table"]), names(r["columns"])]
                            for r in private])


@register("Agent")
def render_csma_agent(parsed: dict) -> None:
    """A CSMA round step (the steps share the agent's name): extraction, check or generation."""
    if "global_schema" in parsed:
        render_csma_extraction(parsed)
    elif "verdict" in parsed:
        render_csma_check(parsed)
    elif "sql" in parsed:
        render_csma_generation(parsed)
    else:
        raise ValueError("not a CSMA round step")


def render_csma_extraction(parsed: dict) -> None:
    """Known schema -> what the agent extracted (retention marked) -> global schema after it."""
    agent = parsed.get("agent") or "The agent"
    st.markdown(f"{round_prefix(parsed)}{text(agent)} merges its private schema with the global "
                "schema and extracts what the question needs.")
    private = {r["table"] for r in parsed.get("private_schema") or []}
    marks: dict[tuple[str, str], str] = {}
    for row in parsed["extracted"]:
        for column in row.get("added_for_joins") or []:
            marks[(row["table"], column)] = " (join)"
        for column in row.get("added_for_retention") or []:
            marks[(row["table"], column)] = " (δ)"
    from_global = [r["table"] for r in parsed.get("known_schema") or []
                   if private and r["table"] not in private]
    known, extracted, shared = st.columns(3)
    with known:
        st.markdown(f"**Known schema** of {text(agent)}")
        schema_table(parsed.get("known_schema") or [],
                     table_marks={t: " (global)" for t in from_global})
    with extracted:
        st.markdown("**Extracted**")
        schema_table([{"table": r["table"], "columns": r["columns"]}
                      for r in parsed["extracted"]], marks)
    with shared:
        st.markdown("**Global schema** after this step")
        schema_table(parsed["global_schema"])
    legend = ["(global): known from the global schema, not privately owned"] if from_global \
        else []
    if any(m == " (δ)" for m in marks.values()):
        legend.append("(δ): added by the retention threshold")
    if any(m == " (join)" for m in marks.values()):
        legend.append("(join): kept so the extracted tables can be joined")
    if legend:
        st.caption(" · ".join(legend))


def render_csma_check(parsed: dict) -> None:
    """The check's verdict on the previous round's SQL, its reason and what execution showed."""
    positive = str(parsed["verdict"]).strip().lower() in _POSITIVE
    verdict = (badge("positive: SQL accepted", "green") if positive
               else badge("negative: SQL rejected", "red"))
    author = f" written by {text(parsed['sql_by'])}" if parsed.get("sql_by") else ""
    st.markdown(f"{round_prefix(parsed)}{text(parsed.get('agent') or 'The agent')} checks the "
                f"SQL{author}: {verdict}")
    if parsed.get("reason"):
        st.markdown(f"**Reason:** {text(parsed['reason'])}")
    execution = parsed.get("execution")
    if isinstance(execution, dict):
        execution = ("ran without error" if execution.get("ok")
                     else f"failed: {execution.get('error') or 'unknown error'}")
    if execution:
        st.caption(f"Execution, as the checker saw it: {text(execution)}")
    if parsed.get("sql"):
        st.code(format_sql(parsed["sql"]), language="sql")


def render_csma_generation(parsed: dict) -> None:
    """The SQL an agent wrote from its extracted schema (told why its check rejected the last)."""
    tables = parsed.get("tables")
    source = f" from {names(tables)}" if tables else ""
    strategy = ("by sub-questions (MAC-SQL decomposition)"
                if parsed.get("strategy") == "decompose" else "")
    st.markdown(f"{round_prefix(parsed)}{text(parsed.get('agent') or 'The agent')} writes SQL"
                f"{source} {strategy}".rstrip())
    if parsed.get("feedback"):
        st.markdown(f"**Knows why the last SQL was rejected:** {text(parsed['feedback'])}")
    for i, sub in enumerate(parsed.get("sub_questions") or [], 1):
        st.markdown(f"{i}. {text(sub.get('question', ''))}")
    if parsed.get("executes") is False:
        st.markdown(":orange[**The SQL fails to execute.**]")
    st.code(format_sql(parsed["sql"]), language="sql")


# -- R³ -----------------------------------------------------------------------------------------

def verdict_badge(verdict: Any) -> str:
    word = str(verdict or "").strip()
    return badge(word or "no verdict", "green" if word.lower().startswith("approve") else "orange")


@register("SQL-Writer")
def render_writer(parsed: dict) -> None:
    """The SQL-Writer's draft (its reasoning) or its correction of an execution error."""
    if not {"error", "sql_before", "reasoning", "style"} & set(parsed):
        raise ValueError("not an R³ SQL-Writer step")  # e.g. the baseline's "SQL Writer"
    if "error" in parsed or "sql_before" in parsed:
        kind = f" ({text(parsed['error_class'])})" if parsed.get("error_class") else ""
        attempt = f" · correction {parsed['attempt']}" if parsed.get("attempt") else ""
        st.markdown(f":orange[**Execution error{kind}**]{attempt}: {text(parsed.get('error'))}")
        render_sql_change(parsed.get("sql_before"), parsed.get("sql_after"))
    else:
        style = {"cot": "chain of thought", "pot": "program of thoughts"}.get(
            parsed.get("style"), parsed.get("style"))
        bits = [f"writing style: {style}"] if style else []
        if parsed.get("examples") is not None:
            bits.append(f"{parsed['examples']} related example(s)")
        if bits:
            st.caption(" · ".join(bits))
    if parsed.get("reasoning"):
        st.markdown(f"**Reasoning:** {prose(parsed['reasoning'])}")


@register("Execution")
def render_r3_execution(parsed: dict) -> None:
    """Whether the SQL runs; a failure goes back to the SQL-Writer."""
    if parsed["ok"]:  # the row count and first rows follow in the execution preview
        st.markdown(f"{round_prefix(parsed)}{badge('the SQL runs', 'green')}")
    else:
        kind = f" ({text(parsed['error_class'])})" if parsed.get("error_class") else ""
        attempt = f" · failure {parsed['attempt']}" if parsed.get("attempt") else ""
        st.markdown(f"{badge('fails', 'red')}{attempt}{kind}: {text(parsed.get('error'))} — "
                    "back to the SQL-Writer")


@register("Invitation")
def render_invitation(parsed: dict) -> None:
    """The reviewer personas the model invited for this database and SQL."""
    reviewers = parsed["reviewers"]
    requested = parsed.get("requested")
    of = f" of {requested} asked for" if requested and requested != len(reviewers) else ""
    st.markdown(f"**{len(reviewers)} reviewer(s) invited**{of}")
    markdown_table(["reviewer", "expertise"],
                   [[cell(r.get("name", "")), cell(r.get("expertise", ""))] for r in reviewers])


@register("Reviewer")
def render_review(parsed: dict) -> None:
    """One R³ reviewer: verdict, expertise and comment."""
    who = parsed.get("expertise") or parsed.get("reviewer") or ""
    named = f" ({text(parsed['reviewer'])})" if parsed.get("reviewer") and parsed.get(
        "expertise") else ""
    st.markdown(f"{round_prefix(parsed)}{verdict_badge(parsed['verdict'])} "
                f"**{text(who)}**{named}")
    if parsed.get("comment"):
        st.markdown(f"> {text(parsed['comment'])}")


@register("Rebuttal/Revision", "Rebuttal", "Revision")
def render_revision(parsed: dict) -> None:
    """One round's end: the reviewers' comments, the writer's rebuttal and the SQL diff."""
    comments = parsed.get("comments") or []
    if parsed.get("round"):
        st.markdown(f"**Round {parsed['round']}** · {len(comments)} review(s)")
    for c in comments:
        who = c.get("expertise") or c.get("reviewer") or "reviewer"
        st.markdown(f"- {verdict_badge(c.get('verdict'))} **{text(who)}**: "
                    f"{text(c.get('comment')) or '(no comment)'}")
    if parsed.get("rebuttal"):
        st.markdown(f"**Writer's rebuttal:** {prose(parsed['rebuttal'])}")
    if parsed.get("consensus"):
        st.markdown(f"{badge('consensus', 'green')} The writer keeps the same SQL: the loop ends.")
        st.code(format_sql(parsed.get("sql_after") or parsed.get("sql_before")), language="sql")
        return
    if parsed.get("diff"):
        st.markdown(f"{badge('revised', 'orange')} The next round reviews the new SQL.")
        st.code(parsed["diff"], language="diff")
        with st.expander("SQL before and after"):
            render_sql_change(parsed.get("sql_before"), parsed.get("sql_after"))
    else:
        render_sql_change(parsed.get("sql_before"), parsed.get("sql_after"))


# -- DEA-SQL ------------------------------------------------------------------------------------

@register("Elements identification")
def render_elements(parsed: dict) -> None:
    """The question's entities and the rewritten question the later prompts think about."""
    st.markdown(f"**Entities:** {names(parsed['entities'])}")
    if parsed.get("rewritten_question"):
        st.markdown(f"**Rewritten question:** {text(parsed['rewritten_question'])}")


@register("Information filter")
def render_information_filter(parsed: dict) -> None:
    """The tables and columns kept for the later agents, the join conditions, the key facts."""
    tables = parsed["tables"]
    if tables:
        markdown_table(["table", "kept columns", "dropped columns"],
                       [[name(t["table"]), names(t.get("kept")), names(t.get("dropped"))]
                        for t in tables])
    elif parsed.get("used") is False:
        st.markdown("The whole schema is used (no table was filtered out).")
    joins = parsed.get("join_conditions")
    if isinstance(joins, list):
        joins = "; ".join(map(str, joins))
    if joins and str(joins).strip().lower() not in ("none", "no", "n/a"):
        st.markdown(f"**Join conditions:** {name(' '.join(str(joins).split()))}")
    info = parsed.get("key_info") or []
    if isinstance(info, dict):
        info = [f"{k}: {v}" for k, v in info.items()]
    if info:
        st.markdown("**Key information:**\n" + "\n".join(f"- {text(line)}" for line in info))


_TYPES = ("EASY", "JOIN", "NESTED", "JOIN-NESTED")


@functools.lru_cache(maxsize=8)
def generation_prompt(question_type: str | None) -> tuple[str, str | None]:
    """``(prompt name, hint line)`` that DEA-SQL's SQL generation uses for a question type."""
    from agents.pipelines.deasql import sql_generation

    template = sql_generation.template_for(question_type)
    path = Path(sql_generation.__file__).parent / "prompts" / f"{template}.txt"
    hint = None
    try:
        match = re.search(r"^### HINT:\s*(.+)$", path.read_text(encoding="utf-8"), re.MULTILINE)
        hint = match.group(1).strip() if match else None
    except OSError:
        pass
    return template, hint


def prompt_line(question_type: str | None) -> str:
    template, hint = generation_prompt(question_type)
    said = f"hint “{text(hint)}”" if hint else "no hint"
    return f"**Generation prompt:** {name(template)} · {said}"


@register("Classification & hint", "Classification")
def render_classification(parsed: dict) -> None:
    """The question type DEA-SQL chose and the generation prompt (hint) it selects."""
    qtype = parsed.get("question_type")
    if qtype is None and not parsed.get("label"):
        st.markdown("Classification is off: every question gets the fixed JOIN hint.")
        st.markdown(prompt_line(None))
        return
    qtype = str(qtype or "").strip().upper()
    label = f" ({text(parsed['label'])})" if parsed.get("label") else ""
    st.markdown(f"**Question type:** {badge(qtype or 'unknown', 'blue')}{label}")
    if qtype in _TYPES:
        st.markdown(prompt_line(qtype))
    if parsed.get("reasoning"):
        st.markdown(f"**Reasoning:** {text(parsed['reasoning'])}")


@register("SQL generation")
def render_generation(parsed: dict) -> None:
    """Which prompt wrote the SQL and the few-shot examples it was shown."""
    examples = parsed["examples"]
    qtype = parsed.get("question_type")
    template = parsed.get("template")
    st.markdown(f"**Prompt:** {name(template) if template else '—'} · question type "
                f"{text(qtype) if qtype else '— (fixed hint)'}")
    if not examples:
        st.caption("Zero-shot: no few-shot example was used.")
        return
    with st.expander(f"Few-shot examples used ({len(examples)})"):
        for i, e in enumerate(examples, 1):
            about = [x for x in (e.get("qtype"),
                                 f"similarity {e['score']:.2f}"
                                 if isinstance(e.get("score"), (int, float)) else None) if x]
            st.markdown(f"**{i}. {text(e.get('question'))}**"
                        + (f" · {' · '.join(about)}" if about else ""))
            st.code(format_sql(e.get("sql")), language="sql")


@functools.lru_cache(maxsize=1)
def self_correction_checklist() -> tuple[str, ...]:
    """The checklist items of DEA-SQL's self-correction prompt, as the model reads them."""
    from agents.pipelines.deasql import self_correction

    path = Path(self_correction.__file__).parent / "prompts" / "self_correction.txt"
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return ()
    items = [m.group(1).strip() for m in map(re.compile(r"^\d+\)\s*(.+)$").match, lines) if m]
    return tuple(i for i in items if not i.lower().startswith("database scheme"))


@register("Self-correction", shows_sql=True)
def render_self_correction(parsed: dict) -> None:
    """The checklist's outcome: no issue, a correction taken, or a correction refused."""
    before, after = parsed["sql_before"], parsed["sql_after"]
    if parsed.get("kept_before"):
        outcome = badge("correction refused: it fails to run, the SQL before it is kept",
                        "orange")
    elif parsed.get("changed"):
        outcome = badge("issue found: SQL corrected", "orange")
    else:
        outcome = badge("no issue found", "green")
    st.markdown(f"**Checklist outcome:** {outcome}")
    render_sql_change(before, after)
    checklist = self_correction_checklist()
    if checklist:
        with st.expander("The checklist"):
            st.markdown("\n".join(f"{i}. {text(item)}" for i, item in enumerate(checklist, 1)))


@register("Active learning", shows_sql=True)
def render_active_learning(parsed: dict) -> None:
    """Whether the error cases' rewrite (MAX/MIN subquery -> ORDER BY ... LIMIT 1) was applied."""
    extremum = {True: "yes", False: "no", None: "not said"}.get(parsed.get("extremum"), "—")
    state = (badge("applied", "green") if parsed["applied"]
             else badge("not applied", "gray"))
    st.markdown(f"{state} {text(parsed.get('reason'))}")
    st.caption(f"Extremum problem, by the model's judgement: {extremum}")
    render_sql_change(parsed.get("sql_before"), parsed.get("sql_after"))


@register("Execution check")
def render_execution_check(parsed: dict) -> None:
    """The final run of the SQL and, when it failed, each repair from the error."""
    repairs = parsed["repairs"]
    if parsed.get("ok") and repairs:  # without repairs, the step's note and preview say it all
        st.markdown(f"{badge(f'runs after {len(repairs)} repair(s)', 'green')}")
    for r in repairs:
        kind = f" ({text(r['error_class'])})" if r.get("error_class") else ""
        st.markdown(f"**Repair {r.get('attempt', '')}** · error{kind}: {text(r.get('error'))}")
        render_sql_change(r.get("sql_before"), r.get("sql_after"))
