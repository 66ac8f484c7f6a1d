"""The database panel shared by the Ask, Schema and Compare pages: pick, upload, summarize.

File names, database names and error messages (which quote table names) reach Markdown here,
so every one of them goes through :func:`ui.format.md_text` and shows as typed.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from ui import databases as dbs
from ui import state as ui_state
from ui.format import human_size, md_text

UPLOAD_OUTCOME = "upload_outcome"


def database_picker(page: str, *, allow_upload: bool = True):
    """Select box of every database of this session (plus an uploader); returns (key, db)."""
    if allow_upload:
        _upload_box(page)
    options = dbs.choices()
    if not options:
        st.info("No database yet: upload a SQLite file.")
        return None, None
    active = dbs.active_key()
    widget = f"db_picker_{page}"
    st.session_state[widget] = active
    st.selectbox("Database", list(options), format_func=options.get, key=widget,
                 on_change=lambda: dbs.set_active(st.session_state[widget]))
    try:
        db = dbs.resolve(active)
    except Exception as exc:  # a sample that cannot be opened must not break the page
        st.error(md_text(f"Could not open {options[active]}: {exc}"))
        return active, None
    return active, db


def _upload_box(page: str) -> None:
    limit = ui_state.upload_limit_mb()
    file = st.file_uploader(
        "Upload a SQLite database", type=dbs.UPLOAD_TYPES, key=f"uploader_{page}",
        help=f"A .sqlite, .db or .sqlite3 file of at most {limit} MB (the server's limit). It "
             "stays in this browser session's memory, opened read-only, and is never saved. "
             "For a WAL-mode database whose -wal file holds changes, upload a .zip of both.")
    if file is None:
        return
    token = f"{getattr(file, 'file_id', '')}|{file.name}|{file.size}"
    outcome = st.session_state.get(UPLOAD_OUTCOME)
    if not outcome or outcome.get("token") != token:
        from agents.database import DatabaseError

        try:
            db = dbs.add_upload(file.name, file.getvalue())
        except DatabaseError as exc:
            outcome = {"token": token, "ok": False, "message": str(exc)}
        except Exception as exc:  # anything else about a bad file is still the file's fault
            outcome = {"token": token, "ok": False,
                       "message": f"{file.name} could not be opened as a SQLite database: {exc}"}
        else:
            dbs.set_active(f"upload:{db.name}")
            outcome = {"token": token, "ok": True, "notice": db.notice,
                       "message": f"Loaded {file.name} ({human_size(db.size_bytes)}, "
                                  f"{len(db.schema.tables)} tables)."}
        st.session_state[UPLOAD_OUTCOME] = outcome
    if not outcome["ok"]:
        st.error(md_text(outcome["message"]))
    elif outcome.get("notice"):
        st.warning(md_text(outcome["notice"]))


def database_summary(db) -> None:
    """Size, tables and row counts of ``db`` at a glance."""
    tables = db.schema.tables
    st.caption(f"**{md_text(db.name)}** · {human_size(db.size_bytes)} · {len(tables)} tables · "
               f"{sum(max(t.row_count, 0) for t in tables):,} rows")
    frame = pd.DataFrame([{"table": t.name, "rows": t.row_count if t.row_count >= 0 else None,
                           "columns": len(t.columns)}
                          for t in tables])
    st.dataframe(frame, hide_index=True, width="stretch",
                 height=min(38 + 35 * len(frame), 320))
