"""Which databases a session can use: the sample databases, the saved ones and its own uploads.

Sample databases are opened once per server process (``st.cache_resource``) and shared read-only
by every session. An upload is first opened with ``Database.from_bytes`` (every check of an
upload applies), then kept as a read-only copy in the studio's home (:mod:`agents.db.library`), so
it is still there after a restart; when the kept copies would exceed their size limit it stays in
this session's memory only, as before, and the user is told. A file on the server can be
registered by path (opened read-only, never modified). Saved databases are opened once per
server process, like the samples. A database is named everywhere by a key: ``"sample:<name>"``,
``"upload:<name>"`` (this session's upload, else a kept one) or ``"path:<name>"`` (a registered
server file).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import streamlit as st

from agents.core.paths import SAMPLE_DBS, cache_dir

from ui import services as ui_services
from ui import signin
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
    from agents.db.database import open_database

    info = sample_catalog()[name]
    return open_database(_sample_folder() / info.file)


def uploads() -> dict:
    """This session's uploaded databases that are not kept, by their database name."""
    return st.session_state.setdefault(UPLOADS, {})


def saved() -> dict[str, dict]:
    """The saved databases (kept uploads and registered server files) by name; none when the
    store cannot be read (the pages that need the store say why)."""
    try:
        return {e["name"]: e for e in ui_services.store().saved_databases()}
    except Exception:
        return {}


@st.cache_resource(show_spinner="Opening the saved database…", max_entries=32)
def _saved_database(name: str, kind: str, path: str, added_at: str):
    from agents.db.library import open_saved

    return open_saved({"name": name, "kind": kind, "path": path})


def add_upload(name: str, data: bytes, *, keep: bool = True, shared: bool = False):
    """Check an upload and keep it (see the module docstring); returns ``(db, notice)``.

    Raises ``DatabaseError`` with a clear message when it is not a usable SQLite database (not
    SQLite, corrupt, empty, or over the server's size limit). ``notice`` is what the user should
    read about what was opened (a WAL-mode file without its -wal) and why a good upload could not
    be kept after a restart; None when there is nothing to say. With ``keep`` off the upload
    stays in this session's memory only, seen by no other session. A kept upload is shared
    with the team when ``shared`` (team mode; in local mode there is nobody else). A name that
    a different saved database has already gets a free one, and the notice says so."""
    from agents.db.database import Database
    from agents.db.library import LibraryError, save_upload

    limit = ui_state.upload_limit_mb() * 1024 * 1024
    db = Database.from_bytes(name, data, max_bytes=limit)
    if not keep:
        uploads()[db.name] = db
        return db, db.notice
    try:
        entry = save_upload(ui_services.store(), db, name, data, max_bytes=limit,
                            shared=shared or not signin.team_mode())
    except LibraryError as exc:
        uploads()[db.name] = db
        return db, _joined(db.notice, str(exc))
    except Exception as exc:  # e.g. the studio's folder is not writable
        uploads()[db.name] = db
        return db, _joined(db.notice, f"{name} is not kept after a restart: {exc}")
    uploads().pop(db.name, None)
    db.close()  # the kept copy is opened (once per server) from now on
    renamed = None
    if entry["name"] != db.name:
        renamed = (f"The name {db.name} is taken, so this one is kept as {entry['name']}; "
                   "nothing was replaced.")
    return resolve(f"upload:{entry['name']}"), _joined(db.notice, renamed)


def _joined(*parts: str | None) -> str | None:
    return " ".join(p for p in parts if p) or None


def register_path(path: str):
    """Register a server file by path; raises ``LibraryError`` with a clear message."""
    from agents.db.library import register_path as register

    entry, db = register(ui_services.store(), path)
    db.close()
    uploads().pop(entry["name"], None)
    return entry


def set_shared(name: str, shared: bool) -> None:
    """Share a saved database with the team, or keep it to its owner (team mode)."""
    ui_services.store().set_database_shared(name, shared)


def may_change(entry: dict) -> bool:
    return signin.viewer().may_change(entry)


def may_register() -> bool:
    """Whether this session may add server files: anyone in local mode, admins in team mode."""
    who = signin.viewer()
    return not who.team or who.is_admin


def remove_saved(name: str) -> bool:
    """Forget a saved database (a kept copy is deleted; a server file is left alone)."""
    from agents.db.library import remove

    done = remove(ui_services.store(), name)
    _saved_database.clear()
    return done


def resolve(key: str | None):
    """The database a key names, or ``None`` when it is not available in this session."""
    if not key or ":" not in key:
        return None
    kind, name = key.split(":", 1)
    if kind == "sample":
        if name not in sample_catalog():
            return None
        return sample_database(name)
    if kind in ("upload", "path"):
        if kind == "upload" and name in uploads():
            return uploads()[name]
        entry = saved().get(name)
        if entry is None or (entry["kind"] == "upload") != (kind == "upload"):
            return None
        from agents.db.database import DatabaseError
        from agents.db.library import LibraryError

        try:
            return _saved_database(entry["name"], entry["kind"], entry["path"], entry["added_at"])
        except (DatabaseError, LibraryError):  # the saved copy or the registered file has gone: not available
            return None
    return None


def key_for_run(db_name: str) -> str | None:
    """The key of the database a stored run used, if it is available (uploads and saved
    databases win, since a user who uploaded a file named like a sample means their own file)."""
    if db_name in uploads():
        return f"upload:{db_name}"
    entry = saved().get(db_name)
    if entry is not None:
        return _key_of(entry)
    if db_name in sample_catalog():
        return f"sample:{db_name}"
    for name in uploads():
        if Path(name).stem == db_name:
            return f"upload:{name}"
    return None


def sharing_rule():
    """``shared(db_name, run=None)``: whether a new run, note or accepted answer on
    ``db_name`` is shared with the team unless its owner says otherwise: as its database is (a
    sample is everyone's, an upload kept in this session's memory is nobody else's) -- and a
    run only when it was given none of its owner's private notes and could have been shown none
    of their private accepted answers, which its trace would otherwise show the team. The owner
    can change it later. Read now, so a worker thread without script context can call it."""
    session_only = set(uploads())
    saved_now = {name: bool(e.get("shared", 1)) for name, e in saved().items()}
    try:
        store = ui_services.store()
        private_notes, private_answers = store.private_note_ids(), store.private_answer_dbs()
    except Exception:  # an unreadable store: nothing is saved anyway
        private_notes, private_answers = set(), set()

    def shared(db_name: str, run=None) -> bool:
        if db_name in session_only or not saved_now.get(db_name, True):
            return False
        if run is not None:
            given = {n.get("id") for n in (run.context or {}).get("notes") or []}
            if given & private_notes or db_name in private_answers:
                return False
        return True
    return shared


def shared_by_default(db_name: str) -> bool:
    return sharing_rule()(db_name)


def _key_of(entry: dict) -> str:
    return f"{'upload' if entry['kind'] == 'upload' else 'path'}:{entry['name']}"


def choices() -> dict[str, str]:
    """Every database this session can pick: key -> label."""
    options = {f"sample:{n}": f"{i.title} ({n}, sample)" for n, i in sample_catalog().items()}
    for entry in saved().values():
        what = "kept upload" if entry["kind"] == "upload" else "server file"
        options[_key_of(entry)] = f"{entry['name']} ({what})"
    options.update({f"upload:{n}": f"{n} (uploaded, this session only)" for n in uploads()})
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
