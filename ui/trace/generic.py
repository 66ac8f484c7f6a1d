"""The view of any output without a view of its own: readable fields, never raw JSON.

Text becomes Markdown paragraphs, flat fields a two-column table, lists of records tables, SQL
formatted code. It is also the fallback when a kind's own view meets a shape it does not expect
(an edited state, an older run), so such a run still opens.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import streamlit as st

from agents.db.sqltext import format_sql
from ui.format import is_scalar

from .parts import render_sql_change

TEXT_KEYS = ("comment", "comments", "reasoning", "explanation", "analysis", "feedback",
             "thought", "rationale")


def _cell(value: Any) -> Any:
    if is_scalar(value):
        return value
    if isinstance(value, list) and all(is_scalar(v) for v in value):
        return ", ".join(map(str, value))
    return json.dumps(value, default=str)


def _is_sql_key(key: str) -> bool:
    k = key.lower()
    return k == "sql" or k.endswith("_sql") or k.startswith("sql_")


def render_generic(parsed: Any, *, _depth: int = 0) -> None:
    """Any JSON value in readable form: text as markdown, flat fields as a two-column table,
    lists of records as tables, SQL as formatted code."""
    if isinstance(parsed, dict):
        change = {"sql_before", "sql_after"} <= set(parsed)
        texts = {k: v for k, v in parsed.items() if isinstance(v, str) and not _is_sql_key(k)
                 and (k.lower() in TEXT_KEYS or len(v) > 100 or "\n" in v)}
        sqls = {k: v for k, v in parsed.items() if _is_sql_key(k) and isinstance(v, str) and v
                and not (change and k in ("sql_before", "sql_after"))}
        shown = set(texts) | set(sqls) | ({"sql_before", "sql_after"} if change else set())
        flat = {k: v for k, v in parsed.items() if k not in shown and is_scalar(v)}
        nested = {k: v for k, v in parsed.items() if k not in shown and k not in flat}
        if flat:
            st.dataframe(pd.DataFrame({"field": [k.replace("_", " ") for k in flat],
                                       "value": ["—" if v is None else str(v)
                                                 for v in flat.values()]}),
                         hide_index=True, width="stretch")
        for key, text in texts.items():
            st.markdown(f"**{key.replace('_', ' ').capitalize()}:** {text}")
        for key, sql in sqls.items():
            if key.lower() != "sql":
                st.caption(key.replace("_", " "))
            st.code(format_sql(sql), language="sql")
        if change:
            render_sql_change(parsed.get("sql_before"), parsed.get("sql_after"))
        for key, value in nested.items():
            st.markdown(f"**{key.replace('_', ' ').capitalize()}**")
            render_generic(value, _depth=_depth + 1)
    elif isinstance(parsed, list):
        if not parsed:
            st.caption("(none)")
        elif all(isinstance(v, dict) for v in parsed):
            st.dataframe(pd.DataFrame([{k: _cell(v) for k, v in row.items()} for row in parsed]),
                         hide_index=True, width="stretch")
        elif all(is_scalar(v) for v in parsed):
            st.markdown("\n".join(f"- {v}" for v in parsed))
        else:
            for item in parsed:
                render_generic(item, _depth=_depth + 1)
    elif parsed is not None:
        st.markdown(str(parsed))
