"""The Ask page's follow-up and knowledge controls, and what a run was given besides its question.

A follow-up is asked on purpose: the box appears once a question on the same database has a final
SQL, and only when it is ticked does the next run carry that question, its SQL and a summary of
its result (:mod:`agents.runs.conversation`). The database's knowledge notes go to every run unless
the user switches them off for one. Both end up in the run's evidence, and
:func:`context_panel` shows a run's reader exactly which notes and which earlier question it got.
"""

from __future__ import annotations

import streamlit as st

from agents.runs.run_context import RunContext
from agents.db.sqltext import format_sql
from ui import preferences as ui_preferences
from ui import services as ui_services
from ui.format import md_text

FOLLOW_UP = "ask_follow_up"
USE_KNOWLEDGE = "ask_use_knowledge"
SUMMARY = "ask_summary"


def _key(name: str, prefix: str) -> str:
    """The widget key of ``name`` (``"ask_follow_up"``) for the page using ``prefix``."""
    return name if prefix == "ask" else prefix + name[len("ask"):]


def _knowledge_count(db_name: str) -> int:
    try:
        return len(ui_services.store().list_notes(db_name, enabled_only=True))
    except Exception:  # the store is reported where runs are saved; never break the question box
        return 0


def context_controls(db, previous, prefix: str = "ask") -> None:
    """The follow-up box (when ``previous`` can be followed up) and the knowledge switch; the
    Compare page draws the same controls under its own keys (``prefix``)."""
    follow_key, knowledge_key = _key(FOLLOW_UP, prefix), _key(USE_KNOWLEDGE, prefix)
    # One slot whether the box is drawn or not: while a run goes on there is no previous run to
    # follow up, and without the slot the controls under it would move up by two places, so the
    # browser would keep their old copies, faded, below the new ones until the run ends (an
    # empty slot clears what it showed at once).
    slot = st.empty()
    if previous is not None and previous.final_sql:
        with slot.container():
            st.checkbox("Follow up on the previous question", key=follow_key,
                        help="The next run is given the previous question, its final SQL (the "
                             "SQL you accepted, if you accepted an answer) and a summary of its "
                             "result, so a question like 'and only for 2024?' or 'now per "
                             "country' is understood. Untick to start a new conversation.")
            # a short label (a checkbox label is cut to one line), the question in full under it
            st.caption(f"Previous question: “{md_text(previous.question)}”")
    else:
        st.session_state.pop(follow_key, None)
    count = _knowledge_count(db.name) if db is not None else 0
    if count:
        st.session_state.setdefault(knowledge_key, True)
        st.checkbox(f"Give the agents this database's knowledge ({count} note(s))",
                    key=knowledge_key,
                    help="Definitions and notes kept for this database on the Knowledge page; "
                         "they reach every pipeline as evidence.")


def summary_control() -> bool:
    """The box that adds the result summary step to the next run; it starts as the user's
    saved choice on the Settings page (on unless they switched it off)."""
    st.session_state.setdefault(SUMMARY, ui_preferences.summary_default())
    return st.checkbox("Summarize the result in words", key=SUMMARY,
                       help="After the final SQL has run, one more model call writes a short "
                            "plain-language answer from the result's first rows, shown as its "
                            "own step. If it fails, the SQL answer still stands.")


def new_run_context(db, hint: str, previous, prefix: str = "ask") -> RunContext | None:
    """The context of the run about to start, or None after showing why it cannot start."""
    from agents.runs.conversation import FollowUpError, run_context

    follow = previous if st.session_state.get(_key(FOLLOW_UP, prefix)) else None
    try:
        store = ui_services.store()
    except Exception as exc:
        st.error(f"The knowledge notes could not be read: {md_text(exc)}")
        return None
    try:
        return run_context(store, db.name, hint, previous=follow,
                           knowledge=bool(st.session_state.get(_key(USE_KNOWLEDGE, prefix),
                                                               True)))
    except FollowUpError as exc:
        st.error(f"Cannot follow up: {md_text(exc)}")
    except Exception as exc:  # an unreadable store must not leave a traceback on the page
        st.error(f"The knowledge notes or the previous answer could not be read from the "
                 f"studio's store: {md_text(exc)}")
    return None


def context_panel(run) -> None:
    """What the run was given besides its question: knowledge notes and the earlier question."""
    context = RunContext.from_run(run)
    if not context.has_context:
        return
    with st.expander("Given to the agents besides the question", expanded=False):
        if context.follow_up is not None:
            follow = context.follow_up
            st.markdown(f"**Follow-up of:** {md_text(follow.question)}")
            if follow.accepted:
                st.caption("Its answer as accepted (the SQL below and its result):")
            st.code(format_sql(follow.sql), language="sql", wrap_lines=True)
            st.caption(f"Its result: {md_text(follow.summary)}")
            if follow.answer:
                st.caption(f"Its answer in words: {md_text(follow.answer)}")
        if context.notes:
            st.markdown("**Knowledge notes used:**")
            st.markdown("\n".join(f"- {md_text(n.line()[2:])}"
                                   + (f" *(note by {md_text(n.author)})*" if n.author else "")
                                   for n in context.notes))
        if context.left_out:
            st.caption(f"{context.left_out} more note(s) were not given: the knowledge given to "
                       "one run is limited in length.")
        st.caption("Every pipeline reads these as the question's evidence.")


def thread_panel(run) -> None:
    """The questions of the conversation ``run`` belongs to, oldest first."""
    thread_id = (run.context or {}).get("thread_id")
    if not thread_id:
        return
    try:
        rows = ui_services.store().thread_runs(thread_id)
    except Exception:
        return
    if len(rows) < 2:
        return
    st.markdown(f"**This conversation** ({len(rows)} questions)")
    lines = []
    for i, row in enumerate(rows, 1):
        current = " ← this run" if row["run_id"] == run.run_id else ""
        lines.append(f"{i}. {md_text(row['question'])} · {md_text(row['pipeline'])} · "
                     f"{md_text(row['status'])}{current}")
    st.markdown("\n".join(lines))
