"""The database panel shared by the Ask, Schema and Compare pages: pick, upload, summarize, and
manage the saved databases (kept uploads, server files registered by path).

File names, database names and error messages (which quote table names) reach Markdown here,
so every one of them goes through :func:`ui.format.md_text` and shows as typed.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from ui import databases as dbs
from ui import signin
from ui import state as ui_state
from ui.format import human_size, md_text

UPLOAD_OUTCOME = "upload_outcome"
SAVED_OUTCOME = "saved_db_outcome"


def database_picker(page: str, *, allow_upload: bool = True):
    """Select box of every database of this session (plus an uploader and the saved-database
    controls); returns (key, db)."""
    if allow_upload:
        _upload_box(page)
        _saved_box(page)
    options = dbs.choices()
    if not options:
        st.info("No database yet: upload a SQLite file.")
        return None, None
    active = dbs.active_key()
    widget = f"db_picker_{page}"
    st.session_state[widget] = active
    st.selectbox("Database", list(options), format_func=options.get, key=widget,
                 on_change=lambda: dbs.set_active(st.session_state.get(widget) or active))
    try:
        db = dbs.resolve(active)
    except Exception as exc:  # a sample that cannot be opened must not break the page
        st.error(md_text(f"Could not open {options[active]}: {exc}"))
        return active, None
    return active, db


def _remembered(key: str, default: bool) -> None:
    """Give the checkbox ``key`` the choice last made, kept under a key of its own: Streamlit
    drops a widget's state in a script run that does not draw it (a sign-in form drawn
    instead, a run cut short by a rerun), and the box would then come back unticked."""
    st.session_state[key] = st.session_state.setdefault(f"{key}_choice", default)


def _remember(key: str) -> None:
    st.session_state[f"{key}_choice"] = bool(st.session_state.get(key))


def _upload_box(page: str) -> None:
    limit = ui_state.upload_limit_mb()
    keep_key, share_key = f"keep_upload_{page}", f"share_upload_{page}"
    _remembered(keep_key, True)
    team = signin.team_mode()
    st.checkbox("Keep uploads", key=keep_key, on_change=_remember, args=(keep_key,),
                help="A read-only copy in the studio's folder, there after a restart. Untick: "
                     "this browser session's memory only." if team else
                     "A kept upload is a read-only copy in the studio's folder: it is there "
                     "after a restart and every browser session of this server can open it. "
                     "Untick to keep the next upload in this browser session's memory only.")
    if team:
        _remembered(share_key, False)
        st.checkbox("Share kept uploads with the team", key=share_key, on_change=_remember,
                    args=(share_key,),
                    help="Unticked, only you (and admins) see the database, its runs and its "
                         "notes; you can share it later under Saved databases.")
    file = st.file_uploader(
        "Upload a SQLite database", type=dbs.UPLOAD_TYPES, key=f"uploader_{page}",
        help=f"A .sqlite, .db or .sqlite3 file of at most {limit} MB (the server's limit), opened "
             "read-only; your file itself is never changed. A kept upload is listed under "
             "'Saved databases', where it can be removed. "
             "For a WAL-mode database whose -wal file holds changes, upload a .zip of both.")
    if file is None:
        return
    token = f"{getattr(file, 'file_id', '')}|{file.name}|{file.size}"
    outcome = st.session_state.get(UPLOAD_OUTCOME)
    if not outcome or outcome.get("token") != token:
        from agents.db.database import DatabaseError

        try:
            db, notice = dbs.add_upload(file.name, file.getvalue(),
                                        keep=bool(st.session_state.get(keep_key)),
                                        shared=bool(st.session_state.get(share_key)))
        except DatabaseError as exc:
            outcome = {"token": token, "ok": False, "message": str(exc)}
        except Exception as exc:  # anything else about a bad file is still the file's fault
            outcome = {"token": token, "ok": False,
                       "message": f"{file.name} could not be opened as a SQLite database: {exc}"}
        else:
            dbs.set_active(f"upload:{db.name}")
            outcome = {"token": token, "ok": True, "notice": notice,
                       "message": f"Loaded {file.name} ({human_size(db.size_bytes)}, "
                                  f"{len(db.schema.tables)} tables)."}
        st.session_state[UPLOAD_OUTCOME] = outcome
    if not outcome["ok"]:
        st.error(md_text(outcome["message"]))
    elif outcome.get("notice"):
        st.warning(md_text(outcome["notice"]))


def _register(page: str) -> None:
    from agents.db.library import LibraryError

    path = st.session_state.get(f"server_path_{page}") or ""
    try:
        entry = dbs.register_path(path)
    except LibraryError as exc:
        st.session_state[SAVED_OUTCOME] = (False, str(exc))
    except Exception as exc:  # the store or the file system: still one message
        st.session_state[SAVED_OUTCOME] = (False, f"{path} could not be registered: {exc}")
    else:
        dbs.set_active(f"path:{entry['name']}")
        st.session_state[f"server_path_{page}"] = ""
        st.session_state[SAVED_OUTCOME] = (
            True, f"Registered {entry['path']} as {entry['name']} (opened read-only).")


def _remove(name: str) -> None:
    try:
        dbs.remove_saved(name)
    except Exception as exc:
        st.session_state[SAVED_OUTCOME] = (False, f"{name} could not be removed: {exc}")
    else:
        st.session_state[SAVED_OUTCOME] = (True, f"Removed {name} from the saved databases.")


def _share(name: str, key: str) -> None:
    try:
        dbs.set_shared(name, bool(st.session_state.get(key)))
    except Exception as exc:
        st.session_state[SAVED_OUTCOME] = (False, f"{name} could not be changed: {exc}")


def _saved_box(page: str) -> None:
    """Saved databases: register a server file by path, remove kept uploads and registrations."""
    from agents.db.library import server_paths_allowed

    outcome = st.session_state.pop(SAVED_OUTCOME, None)
    if outcome is not None:
        (st.success if outcome[0] else st.error)(md_text(outcome[1]))
    saved = dbs.saved()
    with st.expander(f"Saved databases ({len(saved)})"):
        if server_paths_allowed() and dbs.may_register():
            st.text_input("Open a SQLite file on the server by its path", key=f"server_path_{page}",
                          placeholder="/data/chinook.sqlite",
                          help="The file is opened read-only and never modified; it is listed "
                               "here until you remove it (the file itself stays).")
            st.button("Register the file", key=f"server_register_{page}", on_click=_register,
                      args=(page,))
        if not saved:
            st.caption("No saved database yet: uploads are kept here.")
        team = signin.team_mode()
        for name, entry in saved.items():
            what = ("kept copy" if entry["kind"] == "upload" else "server file") + \
                f" · {human_size(entry['size_bytes'])}"
            if team:
                what += f" · {signin.whose(entry)}"
            left, right = st.columns([3, 1])
            left.caption(f"**{md_text(name)}** · {what} · {md_text(entry['file_name'] or '')}")
            mine = dbs.may_change(entry)
            right.button("Remove", key=f"saved_remove_{page}_{name}", on_click=_remove,
                         args=(name,), disabled=not mine,
                         help=None if mine else "Only its owner or an admin removes it.")
            if team and mine:
                key = f"saved_share_{page}_{name}"
                st.session_state[key] = bool(entry.get("shared"))
                left.checkbox("Shared with the team", key=key, on_change=_share,
                              args=(name, key))


def database_summary(db) -> None:
    """Size, tables and row counts of ``db`` at a glance."""
    tables = db.schema.tables
    st.caption(f"**{md_text(db.name)}** · {human_size(db.size_bytes)} · {len(tables)} tables · "
               f"{sum(max(t.row_count, 0) for t in tables):,} rows")
    frame = pd.DataFrame([{"table": t.name, "rows": t.row_count if t.row_count >= 0 else None,
                           "columns": len(t.columns)}
                          for t in tables])
    # narrow number columns: the panel is a third of the page, under 200 px at 1024 px
    st.dataframe(frame, hide_index=True, width="stretch",
                 height=min(38 + 35 * len(frame), 320), column_config={
                     "rows": st.column_config.NumberColumn("rows", width=55),
                     "columns": st.column_config.NumberColumn("cols", width=40,
                                                              help="columns")})
