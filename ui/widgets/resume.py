"""Edit an intermediate step's state and re-run the pipeline from there.

The engine snapshots the pipeline's working state (``StepEvent.data``) after every step, so any
step can be the starting point of a new run. The general editor is that state as JSON; a
selection and any step's SQL get friendlier editors, and the step's output kind decides which
one opens first. The re-run is a new run linked to
the original by ``parent_run_id``.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass

import pandas as pd
import streamlit as st

from agents.core.events import Run, StepEvent
from agents.runs.result_summary import is_summary

from agents.db.sqltext import format_sql
from ui.trace import done_label

KEEP_ALL = "keep_all"


@dataclass
class ResumeRequest:
    """Re-run a run from step ``from_index`` with state ``data`` (None: the state it had)."""

    from_index: int
    data: dict | None


def selection_rows(selection: dict, tables: list[str], schema=None) -> pd.DataFrame:
    """A selection ``{table: "keep_all" | [columns]}`` as rows for a table editor.

    With ``schema``, a table kept with a column list shows the columns the next step really gets:
    :meth:`Schema.subset` adds the primary- and foreign-key columns, as the step's own view of
    its selection does, so the editor and the trace list the same columns.
    """
    kept = _kept_columns(selection, schema)
    rows = []
    for name in tables:
        value = selection.get(name)
        columns = kept.get(name, value)
        rows.append({"table": name, "keep": value is not None,
                     "columns": "all" if value in (None, KEEP_ALL) else ", ".join(columns)})
    return pd.DataFrame(rows)


def _kept_columns(selection: dict, schema) -> dict[str, list[str]]:
    if schema is None:
        return {}
    try:
        subset = schema.subset({t: v for t, v in selection.items() if isinstance(v, list)})
    except Exception:  # an odd selection: show it as it is
        return {}
    return {table.name: table.column_names() for table in subset.tables}


def is_table_selection(value) -> bool:
    """Whether ``value`` is a schema selection (table -> "keep_all" | [columns]); the selection
    pipeline keeps a different record under the same key."""
    if value is None:
        return True
    return isinstance(value, dict) and all(
        isinstance(v, list) and all(isinstance(c, str) for c in v) or v == KEEP_ALL
        for v in value.values())


def selection_from_rows(frame: pd.DataFrame) -> dict:
    """The inverse of :func:`selection_rows`: 'all' (or nothing) keeps every column."""
    selection: dict = {}
    for row in frame.to_dict("records"):
        if not row.get("keep"):
            continue
        text = str(row.get("columns") or "").strip()
        cols = [c.strip() for c in text.split(",") if c.strip()]
        selection[str(row["table"])] = KEEP_ALL if (not cols or text.lower() == "all") else cols
    return selection


# The editor a step opens with, by the kind of its output: a selection step edits its selection;
# a step that leaves SQL edits the SQL; anything else its state as JSON. Every editor the state
# allows stays one click away.
_FIRST_EDITOR = {"schema_selection": "Selection", "information_filter": "Selection"}


def first_editor(event: StepEvent, modes: list[str]) -> str:
    """The editor to open for ``event``, chosen by its output kind."""
    wanted = _FIRST_EDITOR.get(event.output_kind) or ("SQL" if event.sql else "JSON")
    return wanted if wanted in modes else modes[-1]


def _editors(event: StepEvent) -> list[str]:
    modes = []
    if "selection" in event.data and is_table_selection(event.data["selection"]):
        modes.append("Selection")  # None: the whole schema (the Selector did not prune)
    if "sql" in event.data and isinstance(event.data.get("sql"), (str, type(None))):
        modes.append("SQL")
    modes.append("JSON")
    return modes


def edit_and_resume(run: Run, schema=None) -> ResumeRequest | None:
    """The editor (``schema``: the run's database schema, when this session has it); returns a
    request when the user clicks a re-run button."""
    if not run.events:
        return None
    table_names = schema.table_names() if schema is not None else []
    with st.expander("Edit a step and re-run from there", expanded=False):
        st.caption("Pick a step, change what it produced, and the pipeline continues from the "
                   "step after it. The result is a new run linked to this one.")
        # the result summary comes after the run's own steps: a run resumes from those only
        indexes = [i for i, e in enumerate(run.events) if not is_summary(e)]
        if not indexes:
            return None
        index = st.selectbox("Step", indexes, index=len(indexes) - 1,
                             format_func=lambda i: done_label(run.events[i]),
                             key=f"resume_step_{run.run_id}")
        event = run.events[index]
        modes = _editors(event)
        mode = st.radio("Edit as", modes, index=modes.index(first_editor(event, modes)),
                        horizontal=True, key=f"resume_mode_{run.run_id}_{index}")
        key = f"{run.run_id}_{index}"
        edited, error = _edit(event, mode, key, table_names, schema)
        if event.next_step:
            st.caption(f"After the edit the run continues with the step '{event.next_step}'.")
        else:
            st.caption("This step ended the run: re-running from here only re-executes the "
                       "final SQL of the edited state.")
        left, right = st.columns(2)
        go = left.button("Re-run from the next step", type="primary", key=f"resume_go_{key}")
        retry = right.button("Retry this step", key=f"resume_retry_{key}",
                             help="Run this step again from the state before it, unedited.")
        if retry:
            return ResumeRequest(from_index=index, data=None)
        if go:
            if error:
                st.error(error)
                return None
            return ResumeRequest(from_index=index + 1, data=edited)
    return None


def _edit(event: StepEvent, mode: str, key: str, table_names: list[str],
          schema=None) -> tuple[dict, str | None]:
    """Draw the editor for ``mode``; return (edited state, error message or None)."""
    data = copy.deepcopy(event.data)
    if mode == "SQL":
        text = st.text_area("SQL in this step's state", value=format_sql(data.get("sql")),
                            key=f"resume_sql_{key}", height=150)
        data["sql"] = text.strip() or None
        return data, None if text.strip() else "The SQL is empty."
    if mode == "Selection":
        current = data["selection"] or {t: KEEP_ALL for t in table_names}
        tables = table_names or list(current)
        frame = st.data_editor(selection_rows(current, tables, schema), hide_index=True,
                               disabled=["table"], key=f"resume_sel_{key}",
                               column_config={"keep": st.column_config.CheckboxColumn("keep"),
                                              "columns": st.column_config.TextColumn(
                                                  "columns", help="'all' or a comma-separated "
                                                                  "list")})
        data["selection"] = selection_from_rows(frame)
        return data, None if data["selection"] else "Keep at least one table."
    text = st.text_area("State after this step (JSON)", value=json.dumps(data, indent=2),
                        key=f"resume_json_{key}", height=260)
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as exc:
        return data, f"The state is not valid JSON: {exc.msg} (line {exc.lineno})."
    if not isinstance(parsed, dict):
        return data, "The state must be a JSON object ({...})."
    return parsed, None
