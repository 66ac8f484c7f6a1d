"""Knowledge: what the user knows about a database that its schema does not say.

Definitions ("revenue: UnitPrice * Quantity"), conventions and accepted answers kept as notes,
per database. Every enabled note reaches every pipeline as evidence (see
:mod:`agents.runs.run_context`); the box at the bottom shows the exact text the agents receive.
Notes are typed by the user and shown back through :func:`ui.format.md_text`.
"""

from __future__ import annotations

import streamlit as st

from agents.runs.knowledge import note_from_accepted, notes_for
from agents.runs.run_context import RunContext
from agents.store import StoreError

from ui import databases as ui_databases
from ui import services as ui_services
from ui import signin
from ui.bootstrap import run_through_app
from ui.format import md_text
from ui.widgets.db_panel import database_picker

OUTCOME = "knowledge_outcome"


def _report(ok: bool, message: str, place: str = "top") -> None:
    st.session_state[OUTCOME] = (ok, message, place)


def _show_outcome(place: str) -> None:
    """The last action's outcome, where that action's button is (``top``: above the notes)."""
    outcome = st.session_state.get(OUTCOME)
    if outcome is not None and outcome[2] == place:
        del st.session_state[OUTCOME]
        (st.success if outcome[0] else st.error)(md_text(outcome[1]))


def _do(action, done: str, place: str = "top") -> None:
    """Run a store action from a button callback; its outcome is shown on the next run."""
    try:
        action()
    except (ValueError, StoreError) as exc:
        message = str(exc)
        _report(False, message[:1].upper() + message[1:], place)
    except Exception as exc:  # an unexpected store failure is still one message, not a trace
        _report(False, f"The knowledge could not be saved: {exc}", place)
    else:
        _report(True, done, place)


def _add(store, db_name: str) -> None:
    title = st.session_state.get("kn_new_title") or ""
    text = st.session_state.get("kn_new_text") or ""
    if not text.strip():
        _report(False, "Write the note first: the definition or the fact itself.", "new")
        return

    def add() -> None:
        store.add_note(db_name, text, title,
                       shared=bool(st.session_state.get("kn_new_shared", True)))
        st.session_state["kn_new_title"] = st.session_state["kn_new_text"] = ""
    _do(add, "Note added: the next runs on this database will be given it.", "new")


def _save(store, note_id: int) -> None:
    shared = st.session_state.get(f"kn_shared_{note_id}")
    _do(lambda: store.update_note(
        note_id, title=st.session_state.get(f"kn_title_{note_id}"),
        text=st.session_state.get(f"kn_text_{note_id}"),
        enabled=st.session_state.get(f"kn_on_{note_id}"),
        shared=None if shared is None else bool(shared)), "Note saved.")


def _keep_accepted(store, db_name: str, row: dict) -> None:
    title, text = note_from_accepted(row)
    _do(lambda: store.add_note(db_name, text, title, source="accepted",
                               accepted_id=row["id"], shared=bool(row.get("shared", 1))),
        "The accepted answer is now a note.")


def _note_editor(store, note: dict) -> None:
    nid = note["id"]
    mine = signin.viewer().may_change(note)
    with st.container(border=True):
        st.text_input("Term or title", value=note["title"], key=f"kn_title_{nid}",
                      disabled=not mine)
        st.text_area("Note", value=note["text"], key=f"kn_text_{nid}", height=80,
                     disabled=not mine)
        left, middle, right = st.columns([2, 1, 1])
        left.checkbox("Give to the agents", value=bool(note["enabled"]), key=f"kn_on_{nid}",
                      disabled=not mine)
        if signin.team_mode() and mine:
            left.checkbox("Shared with the team", value=bool(note["shared"]),
                          key=f"kn_shared_{nid}")
        middle.button("Save", key=f"kn_save_{nid}", on_click=_save, args=(store, nid),
                      disabled=not mine)
        right.button("Remove", key=f"kn_remove_{nid}", on_click=lambda: _do(
            lambda: store.remove_note(nid), "Note removed."), disabled=not mine)
        about = ["Made from an accepted answer."] if note["source"] == "accepted" else []
        if signin.team_mode():
            about.append(f"This note is {signin.whose(note)}"
                         + ("" if mine else "; only its owner or an admin changes it") + ".")
        if about:
            st.caption(" ".join(about))


def _accepted_section(store, db_name: str, notes: list[dict]) -> None:
    accepted = store.list_accepted(db_name)
    if not accepted:
        return
    st.subheader("Accepted answers")
    st.caption("Answers accepted on the Ask page already serve as worked examples for "
               "pipelines with few-shot prompts; keep one as a note to give it to every run.")
    kept = {n["accepted_id"] for n in notes if n["accepted_id"] is not None}
    for row in accepted[:50]:
        with st.container(border=True):
            st.markdown(md_text(row["question"]))
            st.code(row["sql"], language="sql", wrap_lines=True)
            if row["id"] in kept:
                st.caption("Kept as a note.")
            else:
                st.button("Keep as a note", key=f"kn_accept_{row['id']}", on_click=_keep_accepted,
                          args=(store, db_name, row))


run_through_app()
st.title("Knowledge")
st.caption("Definitions and facts about a database that its schema does not say, e.g. "
           "“revenue: UnitPrice × Quantity” or “active customer: status = 1”. Every pipeline "
           "is given the enabled notes of the database it runs on, as evidence.")
db_key, db = database_picker("knowledge", allow_upload=False)
_show_outcome("top")
if db is not None:
    try:
        store = ui_services.store()
        notes = store.list_notes(db.name)
    except Exception as exc:
        st.error(f"The knowledge store could not be read: {md_text(exc)}")
        st.stop()
    st.subheader(f"Notes for {md_text(db.name)}")
    if not notes:
        st.info("No notes yet for this database.")
    for note in notes:
        _note_editor(store, note)
    with st.form("kn_new", clear_on_submit=False, border=True):
        st.markdown("**New note**")
        st.text_input("Term or title (optional)", key="kn_new_title",
                      placeholder="e.g. revenue")
        st.text_area("Note", key="kn_new_text", height=80,
                     placeholder="e.g. UnitPrice * Quantity of the invoice lines")
        if signin.team_mode():
            st.checkbox("Share with the team (their runs on this database are given it)",
                        key="kn_new_shared", value=ui_databases.shared_by_default(db.name))
        st.form_submit_button("Add note", on_click=_add, args=(store, db.name))
    _show_outcome("new")
    _accepted_section(store, db.name, notes)
    given, left_out = notes_for(store, db.name)
    if given:
        with st.expander("What the agents receive"):
            st.code(RunContext(notes=given).evidence(), language=None, wrap_lines=True)
            if left_out:
                st.caption(f"{left_out} enabled note(s) do not fit in the length given to one "
                           "run and are left out; shorten or disable some.")
