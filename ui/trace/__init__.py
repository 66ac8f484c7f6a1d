"""How an agent step looks on screen: one ``st.status`` block per step, a view per output kind.

The same functions draw a live run, a finished run and a run replayed from the store, so the
three always look alike. Each step's output (``StepEvent.output``, a typed record) is drawn by the
view registered for its *kind* -- a selection as a table, sub-questions with their SQL, a repair
as the error and the SQL before and after; each pipeline's own kinds have their views in the
module named after it -- and a kind without a view goes through :func:`~ui.trace.generic.
render_generic`. The prompt and raw model output sit one click away.
"""

from __future__ import annotations

from typing import Any, Callable

import streamlit as st

from agents.core.events import STOPPED, StepEvent, StepStarted
from agents.db.exec_result import limit_note
from agents.outputs import Generic, Output
from agents.outputs.base import holds_text, short, shows_sql
from agents.db.sqltext import format_sql
from ui.format import md_text, preview_frame, tokens_text

from .edits import render_edit
from .generic import render_generic

View = Callable[[Any], None]
_VIEWS: dict[str, View] = {}


def view(*kinds: str) -> Callable[[View], View]:
    """Register the view that draws outputs of the given kinds (it receives the typed record)."""
    def decorate(fn: View) -> View:
        for kind in kinds:
            _VIEWS[kind] = fn
        return fn
    return decorate


def render_output(output: Output) -> None:
    """Draw ``output`` with its kind's view, then any fields the kind does not declare. A view
    that meets a shape it does not expect falls back to the generic view, never breaking the
    page."""
    data = output.to_dict()
    fn = _VIEWS.get(output.kind)
    if fn is None or isinstance(output, Generic):
        if data not in (None, {}, []):
            render_generic(data)
        return
    try:
        fn(output)
    except Exception:
        render_generic(data)
        return
    if output.extra:
        render_generic(output.extra)


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
        return f"{head} — {STOPPED if event.stopped else 'failed'}{edited}"
    if event.status == "skipped":
        return f"{head} — skipped{edited}"
    tokens = event.prompt_tokens + event.completion_tokens
    cost = f"{tokens:,} tokens · " if event.calls else ""
    cached = f"{event.cache_label()} · " if event.cached_calls else ""
    return f"{head} — {cost}{cached}{event.seconds:.1f} s{edited}"


def status_state(event: StepEvent) -> str:
    return "error" if event.status == "error" else "complete"


_NOT_GIVEN = object()


def _input_text(value) -> str:
    """An input as a reader says it: yes/no for a switch, one short line for the rest."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    return short(value, empty="—")


def render_event(event: StepEvent, original: dict | None | object = _NOT_GIVEN) -> None:
    """The body of one step's block: what the agent looked at and produced, then the details.

    For an edited step, ``original`` is the model's own state (see
    :func:`agents.core.state_diff.original_states`; None when it is no longer stored): the edit is
    then shown first, as what the next step saw.
    """
    if event.edited and original is not _NOT_GIVEN:
        render_edit(event, original)  # type: ignore[arg-type]
    if event.stopped:
        st.markdown(":orange[**Stopped by the user** before this step ended.]")
    elif event.error:
        st.markdown(f":red[**Step failed:** {md_text(event.error)}]")
    notes = [n for n in event.notes if not holds_text(event.parsed, n)]
    reason = notes.pop() if event.status == "skipped" and notes else None
    for note in notes:
        st.caption(md_text(note))
    if reason:
        st.markdown(f"**Skipped:** {md_text(reason)}")
    if event.inputs:
        st.caption("Looked at: " + " · ".join(f"**{md_text(k.replace('_', ' '))}**: "
                                               f"{md_text(_input_text(v))}"
                                               for k, v in event.inputs.items()))
    output = event.output
    render_output(output)
    if event.sql and not shows_sql(output, event.sql):
        st.code(format_sql(event.sql), language="sql", wrap_lines=True)
    if event.execution and not (event.execution.get("error") and
                                holds_text(event.parsed, event.execution["error"])):
        _render_execution(event.execution, output.executed_label())
    if event.calls:
        cached = (f" ({event.cache_label()}: answered from the response cache, so no model "
                  "time)" if event.cached_calls else "")
        st.caption(f"{len(event.calls)} model call(s){cached} · "
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
                           + (" · from the response cache" if call.cached else ""))
                st.code(call.raw or "(empty)", language=None, wrap_lines=True)
    elif event.status != "error":
        st.caption(f"No model call · {event.seconds:.2f} s")


def _render_execution(preview: dict, label: str = "Executed") -> None:
    if preview.get("ok"):
        frame = preview_frame(preview)
        limit = limit_note(preview)
        more = f" ({limit})" if limit else ""
        st.caption(f"{label}: {preview.get('row_count', len(frame))} row(s){more} in "
                   f"{preview.get('seconds') or 0:.2f} s")
        if not frame.empty:
            st.dataframe(frame.head(5), hide_index=True, width="stretch")
    else:
        kind = f" ({md_text(preview['error_class'])})" if preview.get("error_class") else ""
        st.markdown(f":orange[**Execution error{kind}:** "
                    f"{md_text(preview.get('error') or 'unknown')}]")
        if preview.get("hint"):
            st.caption(md_text(preview["hint"]))


def render_trace(events: list[StepEvent], *, expanded: bool = False,
                 originals: dict[int, dict | None] | None = None) -> None:
    """A finished (or stored) run's steps, one closed status block each; ``originals`` (index ->
    the model's own state) shows each edited step's edit against it."""
    for event in events:
        with st.status(done_label(event), state=status_state(event),
                       expanded=expanded or event.status == "error"):
            if originals is not None and event.index in originals:
                render_event(event, originals[event.index])
            else:
                render_event(event)


# The DEA-SQL, R3 and CSMA renderers register themselves on import (they use the names above).


def render_graph(run) -> None:
    """The pipeline's declared step graph with the steps this run went through filled in."""
    from agents.core.graph import to_dot
    from agents.pipelines import get_pipeline

    try:
        pipeline = get_pipeline(run.pipeline)
    except KeyError:
        return
    with st.expander("Step graph of this run"):
        st.caption("The steps the pipeline declares and which may follow which; the steps this "
                   "run went through are filled, with how often each ran.")
        st.graphviz_chart(to_dot(pipeline, [e.step for e in run.events]))


# Each pipeline's views register themselves on import (they use the names above).
from . import answer, common, csma, deasql, r3, retrieval, selection, summary  # noqa: E402,F401
