"""The accepted answers: the (question, SQL, result) pairs the example bank learns from.

Listed per database with who accepted them and when, their result and the run they came from;
removing one takes it out of the bank (later runs no longer see it as an example) and unmarks
its run, while the run itself stays in History.
"""

from __future__ import annotations

import streamlit as st

from agents.db.sqltext import format_sql

from ui import signin
from ui.format import md_text
from ui.timefmt import local_time
from ui.widgets.result import result_view

NOTICE = "accepted_notice"


def _remove(store, accepted_id: int, question: str) -> None:
    removed = store.remove_accepted(accepted_id)
    st.session_state[NOTICE] = (f"Removed the accepted answer to “{question}”." if removed
                                else "That accepted answer was already removed.")


def _share(store, accepted_id: int, key: str) -> None:
    try:
        store.set_accepted_shared(accepted_id, bool(st.session_state.get(key)))
    except ValueError as exc:
        st.session_state[NOTICE] = str(exc)


def accepted_pane(store) -> None:
    st.caption("Every answer accepted on the Ask page, per database. The example bank offers "
               "them as few-shot examples to later questions on the same database.")
    notice = st.session_state.pop(NOTICE, None)
    if notice:
        st.success(md_text(notice))
    answers = store.list_accepted()
    if not answers:
        st.info("No accepted answers yet: accept a run's SQL on the Ask page to add one.")
        return
    databases = sorted({a["db_name"] for a in answers})
    db_name = st.selectbox("Database", databases, key="accepted_db",
                           format_func=lambda d: f"{d} ({sum(a['db_name'] == d for a in answers)})")
    for answer in (a for a in answers if a["db_name"] == db_name):
        with st.container(border=True):
            st.markdown(f"**{md_text(answer['question'])}**")
            who = f" by {answer['author']}" if answer.get("author") else ""
            source = f" · from run {answer['run_id']}" if answer.get("run_id") else ""
            whose = f" · {signin.whose(answer)}" if signin.team_mode() else ""
            st.caption(md_text(f"Accepted{who} at {local_time(answer['created_at'])}{source}")
                       + whose)
            st.code(format_sql(answer["sql"]), language="sql", wrap_lines=True)
            result_view(answer.get("result_preview"), key=f"accepted_{answer['id']}",
                        chart=False)
            mine = signin.viewer().may_change(answer)
            if signin.team_mode() and mine:
                key = f"accepted_share_{answer['id']}"
                st.session_state[key] = bool(answer.get("shared"))
                st.checkbox("Shared with the team (offered as an example to their runs)",
                            key=key, on_change=_share, args=(store, answer["id"], key))
            st.button("Remove from the example bank", key=f"accepted_remove_{answer['id']}",
                      on_click=_remove, args=(store, answer["id"], answer["question"]),
                      disabled=not mine,
                      help=None if mine else "Only its owner or an admin removes it.")
