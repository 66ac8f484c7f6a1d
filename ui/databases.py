"""Which databases a session can use: the shared sample databases and its own uploads.

Sample databases are opened once per server process (``st.cache_resource``) and shared read-only
by every session. An upload is loaded into memory with ``Database.from_bytes`` and kept in this
session's ``st.session_state`` only: it is never saved and no other session sees it (a ``.zip``
of a WAL-mode database and its ``-wal`` is merged in a private temporary folder, removed at once).
A database is named everywhere by a key, ``"sample:<name>"`` or ``"upload:<name>"``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import streamlit as st

from agents.paths import SAMPLE_DBS, cache_dir

from ui import state as ui_state

UPLOADS = "uploaded_dbs"
ACTIVE_DB = "active_db"
UPLOAD_TYPES = ["sqlite", "db", "sqlite3", "zip"]  # a zip: one database and its -wal file


@dataclass
class SampleInfo:
    name: str
    title: str
    description: str
    questions: list[dict] = field(default_factory=list)
    file: str = ""


@st.cache_resource(show_spinner=False)
def sample_catalog() -> dict[str, SampleInfo]:
    """The sample databases described in ``sample_dbs/questions.json``, by name."""
    path = SAMPLE_DBS / "questions.json"
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {name: SampleInfo(name=name, title=d.get("title", name),
                             description=d.get("description", ""),
                             questions=list(d.get("questions", [])),
                             file=d.get("file", f"{name}.sqlite"))
            for name, d in data.get("databases", {}).items()}


@st.cache_resource(show_spinner=False)
def _sample_folder() -> Path:
    """Where the sample files are: ``$STUDIO_SAMPLE_DIR`` when set, else the repository folder,
    else a fresh build in the cache folder (the app never writes into the repository)."""
    if os.environ.get("STUDIO_SAMPLE_DIR"):
        return Path(os.environ["STUDIO_SAMPLE_DIR"])
    if all((SAMPLE_DBS / info.file).is_file() for info in sample_catalog().values()):
        return SAMPLE_DBS
    from sample_dbs.build import build_all

    out = cache_dir() / "sample_dbs"
    if not all((out / info.file).is_file() for info in sample_catalog().values()):
        build_all(out)
    return out


@st.cache_resource(show_spinner="Opening the sample database…")
def sample_database(name: str):
    from agents.database import open_database

    info = sample_catalog()[name]
    return open_database(_sample_folder() / info.file)


def uploads() -> dict:
    """This session's uploaded databases by their database name."""
    return st.session_state.setdefault(UPLOADS, {})


def add_upload(name: str, data: bytes):
    """Load an upload into memory; raises ``DatabaseError`` with a clear message when it is not
    a usable SQLite database (not SQLite, corrupt, empty, or over the server's size limit)."""
    from agents.database import Database

    limit_mb = ui_state.upload_limit_mb()
    db = Database.from_bytes(name, data, max_bytes=limit_mb * 1024 * 1024)
    uploads()[db.name] = db
    return db


def resolve(key: str | None):
    """The database a key names, or ``None`` when it is not available in this session."""
    if not key or ":" not in key:
        return None
    kind, name = key.split(":", 1)
    if kind == "sample":
        if name not in sample_catalog():
            return None
        return sample_database(name)
    if kind == "upload":
        return uploads().get(name)
    return None


def key_for_run(db_name: str) -> str | None:
    """The key of the database a stored run used, if this session has it (uploads win, since a
    session that uploaded a file named like a sample means its own file)."""
    if db_name in uploads():
        return f"upload:{db_name}"
    if db_name in sample_catalog():
        return f"sample:{db_name}"
    for name in uploads():
        if Path(name).stem == db_name:
            return f"upload:{name}"
    return None


def choices() -> dict[str, str]:
    """Every database this session can pick: key -> label."""
    options = {f"sample:{n}": f"{i.title} ({n}, sample)" for n, i in sample_catalog().items()}
    options.update({f"upload:{n}": f"{n} (uploaded)" for n in uploads()})
    return options


def active_key() -> str | None:
    options = choices()
    key = st.session_state.get(ACTIVE_DB)
    if key not in options:
        key = next(iter(options), None)
        st.session_state[ACTIVE_DB] = key
    return key


def set_active(key: str) -> None:
    st.session_state[ACTIVE_DB] = key


def examples_for(key: str | None) -> list[dict]:
    """Example questions of a sample database (uploads have none)."""
    if key and key.startswith("sample:"):
        info = sample_catalog().get(key.split(":", 1)[1])
        return info.questions if info else []
    return []
