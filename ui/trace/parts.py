"""Pieces the trace views are drawn from: text made safe for Markdown, small tables, badges and
an SQL revision shown before and after.

Names (tables, columns, entities) are shown as code spans, which render no Markdown; free text
from a model or a database goes through :func:`ui.format.md_text`, so a ``$`` cannot start math,
a ``|`` cannot split a table cell and ``![x](http://…)`` cannot load an image.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterable

import streamlit as st

from agents.db.sqltext import format_sql, same_sql
from ui.format import md_text

def text(value: Any) -> str:
    """Free text (a database value, an error) shown literally: no Markdown, no LaTeX, no link
    or image, one line."""
    return md_text(" ".join(str(value if value is not None else "").split()))


def remark(value: Any) -> str:
    """A model's one-line remark (a review's comment) shown literally, but for SQL it quotes
    in backticks or a fenced block, which is shown as code rather than as the backticks."""
    return _with_code(" ".join(str(value if value is not None else "").split()), md_text)


def prose(value: Any) -> str:
    """Longer model text (reasoning, a rebuttal) shown literally, its line breaks kept; SQL it
    quotes in backticks or a fenced block is shown as code."""
    return _with_code(str(value or "").strip(),
                      lambda part: "  \n".join(md_text(line) for line in part.split("\n")))


# Code a model quotes: a fenced block (```sql ...```, its language tag left out) or a `span`.
_QUOTED_CODE = re.compile(r"```[ \t]*(?:[A-Za-z][\w+-]*(?=\s))?(.*?)```|`([^`\n]+)`", re.DOTALL)


def _with_code(value: str, literal: Callable[[str], str]) -> str:
    parts, at = [], 0
    for match in _QUOTED_CODE.finditer(value):
        code = match.group(1) if match.group(1) is not None else match.group(2)
        parts += [literal(value[at:match.start()]), _code_span(code)]
        at = match.end()
    parts.append(literal(value[at:]))
    return "".join(parts)


def _code_span(code: str) -> str:
    """Quoted code as one code span, which renders no Markdown: fenced by a backtick run longer
    than any inside it, so a quoted identifier (`` `order` ``) keeps its backticks."""
    code = " ".join(code.split())
    if not code:
        return ""
    fence = "`" * (max((len(run) for run in re.findall(r"`+", code)), default=0) + 1)
    pad = " " if code.startswith("`") or code.endswith("`") else ""
    return f"{fence}{pad}{code}{pad}{fence}"


def cell(value: Any) -> str:
    """Text inside a Markdown table cell: literal, and a ``|`` cannot split the cell."""
    return re.sub(r"(?<!\\)\|", r"\\|", text(value))


def name(value: Any) -> str:
    """A table, column or entity name as a code span (code spans render no Markdown)."""
    return "`" + " ".join(str(value).split()).replace("`", "'") + "`"


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


def round_prefix(round_number: int | None) -> str:
    return f"**Round {round_number}** · " if round_number else ""


def error_line(label: str, error: Any, error_class: Any = None, attempt: str = "") -> str:
    """``**label (class)** · attempt: error`` with the error shown as text."""
    kind = f" ({text(error_class)})" if error_class else ""
    return f"**{label}{kind}**{attempt}: {text(error)}"


def render_sql_change(before: str | None, after: str | None) -> None:
    """An SQL revision: the version before above the version after (side by side, each half
    would wrap a long query into a narrow column at 1024 px), or one when nothing changed."""
    if before and after and same_sql(before, after):
        st.caption("SQL unchanged")
        st.code(format_sql(after), language="sql", wrap_lines=True)
        return
    st.caption("SQL before")
    st.code(format_sql(before) or "—", language="sql", wrap_lines=True)
    st.caption("SQL after")
    st.code(format_sql(after) or "—", language="sql", wrap_lines=True)


def rewritten_note(lead: str, written_sql: str, error: str | None, changes: str) -> None:
    """SQL that failed and the one clear change that made it run (``name_rewrite``), the SQL as
    written folded away."""
    failed = f"failed ({text(error)})" if error else "failed"
    st.markdown(f"{badge('rewritten to run', 'blue')} {lead} {failed}; one clear change makes "
                f"it run: {text(changes)}")
    with st.expander("The SQL as written"):
        st.code(format_sql(written_sql), language="sql", wrap_lines=True)


def repaired_by_note(from_hint: bool | None, change: str | None = None) -> None:
    """Who wrote a repair, with ``repair_from_hint`` on: the version the error's hint held,
    taken with no model call, or the model (unset: the option was off, nothing is said)."""
    if from_hint:
        st.markdown(f"{badge('taken from the hint', 'green')} no model call: the hint held the "
                    f"version of the query that runs ({text(change or 'one clear change')}), "
                    "run again under the run's limits")
    elif from_hint is False:
        st.caption("Asked the model: the hint held no version of the query that runs")


def writer_repair_notes(step) -> None:
    """How a writer that starts afresh (CSMA's global writer, the writer afresh) came to its
    SQL: its first SQL repaired once, and the name rewrite of its SQL as written."""
    if step.first_sql:
        st.markdown(f"Its first SQL failed ({text(step.first_error or 'error')}) and was "
                    "repaired once" + ("." if step.from_hint else ", told the error."))
        repaired_by_note(step.from_hint, step.hint_rewrite)
        with st.expander("Its first SQL"):
            st.code(format_sql(step.first_sql), language="sql", wrap_lines=True)
    if step.rewrite and step.written_sql:
        rewritten_note("Its SQL as the model wrote it", step.written_sql, step.written_error,
                       step.rewrite)
