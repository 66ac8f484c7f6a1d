"""How an agent step looks on screen: one ``st.status`` block per step, with a renderer per agent.

The same functions draw a live run, a finished run and a run replayed from the store, so the
three always look alike. Each agent's structured output (``StepEvent.parsed``) is drawn by the
renderer registered under its agent name -- the Selector's decisions as a table, the
Decomposer's sub-questions with their SQL, the Refiner's error and repair; the DEA-SQL, R³ and
CSMA agents' renderers live in :mod:`ui.trace.pipelines` -- and anything without a
dedicated renderer goes through :func:`render_generic`, which shows dicts as tables and text as
markdown, never as raw JSON. The prompt and raw model output sit one click away.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable

import pandas as pd
import streamlit as st

from agents.events import StepEvent, StepStarted
from agents.sqltext import normalize_sql

from ui.format import format_sql, is_scalar, preview_frame, tokens_text

Renderer = Callable[[Any], None]

_RENDERERS: dict[str, Renderer] = {}
_SHOWS_SQL: set[str] = set()  # agents whose renderer already shows the step's SQL

TEXT_KEYS = ("comment", "comments", "reasoning", "explanation", "analysis", "feedback",
             "thought", "rationale")


def _norm(agent: str | None) -> str:
    return re.sub(r"[^a-z0-9]+", "", (agent or "").lower())


def register(*agents: str, shows_sql: bool = False) -> Callable[[Renderer], Renderer]:
    """Register a renderer of ``StepEvent.parsed`` for the named agents."""
    def decorate(fn: Renderer) -> Renderer:
        for agent in agents:
            _RENDERERS[_norm(agent)] = fn
            if shows_sql:
                _SHOWS_SQL.add(_norm(agent))
        return fn
    return decorate


def renderer_for(agent: str | None) -> Renderer:
    """The agent's renderer: exact name first, then the name's first word ("Reviewer 2")."""
    key = _norm(agent)
    if key in _RENDERERS:
        return _RENDERERS[key]
    first = _norm((agent or "").split()[0]) if (agent or "").split() else ""
    return _RENDERERS.get(first, render_generic)


def render_parsed(agent: str | None, parsed: Any) -> None:
    """Draw ``parsed`` with the agent's renderer; a shape the renderer does not expect falls back
    to the generic view rather than breaking the page."""
    if parsed is None or parsed == {} or parsed == []:
        return
    fn = renderer_for(agent)
    try:
        fn(parsed)
    except Exception:
        if fn is render_generic:
            st.code(json.dumps(parsed, indent=2, default=str), language="json")
        else:
            render_generic(parsed)


# -- agent renderers ---------------------------------------------------------------------------

_DECISIONS = {"keep_all": "keep all columns", "drop_all": "dropped", "columns": "keep some columns"}


@register("Selector", "Information filter")
def render_selection(parsed: dict) -> None:
    """Which tables and columns the Selector (or DEA-SQL's information filter) kept."""
    tables = parsed["tables"]
    if parsed.get("used") is False and not tables:
        st.caption("Every table was kept (the Selector did not prune the schema).")
    rows = [{"table": t.get("table", ""),
             "decision": _DECISIONS.get(t.get("decision"), t.get("decision") or ""),
             "kept columns": ", ".join(map(str, t.get("kept") or [])) or "—",
             "dropped columns": ", ".join(map(str, t.get("dropped") or [])) or "—"}
            for t in tables]
    if rows:
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    extra = {k: v for k, v in parsed.items() if k not in ("tables", "used")}
    if extra:
        render_generic(extra)


@register("Decomposer")
def render_decomposition(parsed: dict) -> None:
    """The Decomposer's sub-questions, each with the SQL that answers it."""
    subs = parsed["sub_questions"]
    for i, sub in enumerate(subs, 1):
        st.markdown(f"**{i}. {sub.get('question', '')}**")
        if sub.get("sql"):
            st.code(format_sql(sub["sql"]), language="sql")
    extra = {k: v for k, v in parsed.items() if k != "sub_questions"}
    if extra:
        render_generic(extra)


@register("Refiner", shows_sql=True)
def render_refinement(parsed: dict) -> None:
    """The execution error the Refiner saw and the SQL it produced."""
    if parsed.get("status") == "ok":
        st.markdown(f"The SQL runs and returns {parsed.get('rows', 0):,} row(s): nothing to "
                    "repair.")
    elif parsed.get("status") == "gave_up":
        st.markdown("**Gave up repairing** — the last SQL is kept.")
    if parsed.get("error"):
        kind = f" ({parsed['error_class']})" if parsed.get("error_class") else ""
        attempt = f" · attempt {parsed['attempt']}" if parsed.get("attempt") else ""
        st.markdown(f"**Error{kind}**{attempt}: {parsed['error']}")
        if parsed.get("hint"):
            st.caption(f"Hint given with the error: {parsed['hint']}")
    if parsed.get("sql_before") or parsed.get("sql_after"):
        render_sql_change(parsed.get("sql_before"), parsed.get("sql_after"))
    extra = {k: v for k, v in parsed.items()
             if k not in ("error", "error_class", "hint", "sql_before", "sql_after", "attempt",
                          "status", "rows")}
    if extra:
        render_generic(extra)


def render_sql_change(before: str | None, after: str | None) -> None:
    """An SQL revision: both versions side by side, or one when nothing changed."""
    if before and after and normalize_sql(before) == normalize_sql(after):
        st.caption("SQL unchanged")
        st.code(format_sql(after), language="sql")
        return
    left, right = st.columns(2)
    with left:
        st.caption("SQL before")
        st.code(format_sql(before) or "—", language="sql")
    with right:
        st.caption("SQL after")
        st.code(format_sql(after) or "—", language="sql")


# -- generic renderer --------------------------------------------------------------------------

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


# -- one step ----------------------------------------------------------------------------------

def _heading(index: int, agent: str, title: str) -> str:
    name = f"{index + 1}. {agent}"
    return f"{name}: {title}" if title and title != agent else name


def running_label(started: StepStarted, elapsed: float | None = None) -> str:
    tail = f"running… {elapsed:.0f} s" if elapsed is not None else "running…"
    return f"{_heading(started.index, started.agent, started.title)} — {tail}"


def done_label(event: StepEvent) -> str:
    head = _heading(event.index, event.agent, event.title)
    edited = " · edited" if event.edited else ""
    if event.status == "error":
        return f"{head} — failed{edited}"
    if event.status == "skipped":
        return f"{head} — skipped{edited}"
    tokens = event.prompt_tokens + event.completion_tokens
    cost = f"{tokens:,} tokens · " if event.calls else ""
    return f"{head} — {cost}{event.seconds:.1f} s{edited}"


def status_state(event: StepEvent) -> str:
    return "error" if event.status == "error" else "complete"


def render_event(event: StepEvent) -> None:
    """The body of one step's block: what the agent looked at and produced, then the details."""
    if event.error:
        st.markdown(f":red[**Step failed:** {event.error}]")
    notes = [n for n in event.notes if not _shows_text(event.parsed, n)]
    reason = notes.pop() if event.status == "skipped" and notes else None
    for note in notes:
        st.caption(note)
    if reason:
        st.markdown(f"**Skipped:** {reason}")
    if event.inputs:
        st.caption("Looked at: " + " · ".join(f"**{k}**: {_short(v)}"
                                               for k, v in event.inputs.items()))
    render_parsed(event.agent, event.parsed)
    if event.sql and _norm(event.agent) not in _SHOWS_SQL and not _shows(event.parsed, event.sql):
        st.code(format_sql(event.sql), language="sql")
    if event.execution and not (event.execution.get("error") and
                                _shows(event.parsed, event.execution["error"])):
        _render_execution(event.execution)
    if event.calls:
        st.caption(f"{len(event.calls)} model call(s) · "
                   f"{tokens_text(event.prompt_tokens, event.completion_tokens)} · "
                   f"{event.llm_seconds:.1f} s model · {event.seconds:.1f} s step")
        with st.expander("Prompt and raw model output"):
            for i, call in enumerate(event.calls, 1):
                if len(event.calls) > 1:
                    st.markdown(f"**Call {i}**" + (f" — {call.error}" if call.error else ""))
                elif call.error:
                    st.caption(call.error)
                for message in call.messages:
                    st.caption(message.get("role", ""))
                    st.code(str(message.get("content", "")), language=None, wrap_lines=True,
                            height=320)
                st.caption(f"raw output · {call.prompt_tokens:,} in / "
                           f"{call.completion_tokens:,} out tokens · {call.seconds:.1f} s"
                           + (" · cached" if call.cached else ""))
                st.code(call.raw or "(empty)", language=None, wrap_lines=True)
    elif event.status != "error":
        st.caption(f"No model call · {event.seconds:.2f} s")


def _strings(value: Any):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _shows(parsed: Any, sql: str) -> bool:
    """Whether the view of ``parsed`` already shows ``sql`` (so it is not shown twice)."""
    target = normalize_sql(sql)
    return any(normalize_sql(text) == target for text in _strings(parsed))


def _shows_text(parsed: Any, note: str) -> bool:
    """Whether ``parsed`` holds ``note`` word for word (a reason its renderer already shows)."""
    target = " ".join(note.split())
    return any(" ".join(text.split()) == target for text in _strings(parsed))


def _short(value: Any, limit: int = 160) -> str:
    text = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
    text = " ".join(text.split()) or "—"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _render_execution(preview: dict) -> None:
    if preview.get("ok"):
        frame = preview_frame(preview)
        more = " (truncated)" if preview.get("truncated") else ""
        st.caption(f"Executed: {preview.get('row_count', len(frame))} row(s){more} in "
                   f"{preview.get('seconds') or 0:.2f} s")
        if not frame.empty:
            st.dataframe(frame.head(5), hide_index=True, width="stretch")
    else:
        kind = f" ({preview['error_class']})" if preview.get("error_class") else ""
        st.markdown(f":orange[**Execution error{kind}:** {preview.get('error') or 'unknown'}]")
        if preview.get("hint"):
            st.caption(preview["hint"])


def render_trace(events: list[StepEvent], *, expanded: bool = False) -> None:
    """A finished (or stored) run's steps, one closed status block each."""
    for event in events:
        with st.status(done_label(event), state=status_state(event),
                       expanded=expanded or event.status == "error"):
            render_event(event)


# The DEA-SQL, R3 and CSMA renderers register themselves on import (they use the names above).
from . import pipelines  # noqa: E402,F401
