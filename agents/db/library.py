"""Databases that stay: uploads kept as read-only copies, and server files registered by path.

An upload used to live only in its browser session. Kept here, it survives a restart: its bytes
(a ``.zip`` of a WAL-mode database unpacked and merged with its ``-wal`` first, as an upload is
opened) are written once to ``studio_home()/databases`` and the copy is made read-only; the
store lists it (:mod:`agents.store.databases`). Only files the upload checks accepted are kept
(the caller opens the upload with :meth:`Database.from_bytes` first), and the copies together
may take at most :func:`library_limit_bytes`.

A file already on the server can be registered by its path instead: nothing is copied, the file
is opened read-only like any database (:func:`agents.db.database.open_database`) and never written;
removing the entry forgets the path and leaves the file alone. It is off unless the operator
names the folders it may open (``STUDIO_SERVER_PATHS``, separated by ``os.pathsep``): any path
a visitor types would otherwise open any file the server can read, the studio's own store of
every user's runs included. Paths are resolved (symlinks followed) before they are checked, the
studio's home and the model response cache are never opened, only regular files are (a named
pipe would block the session),
and a path that is missing, a folder, unreadable or outside those folders gets one and the same
message, so the messages do not tell a visitor what exists on the server.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import time
from pathlib import Path

from agents.db import wal
from agents.db.database import Database, DatabaseError, open_database
from agents.core.paths import cache_dir, studio_home
from agents.store.access import LOCAL

DEFAULT_LIMIT_MB = 2048


class LibraryError(Exception):
    """A database cannot be kept or registered; the message says why."""


def library_dir() -> Path:
    path = studio_home() / "databases"
    path.mkdir(parents=True, exist_ok=True)
    return path


def library_limit_bytes() -> int:
    """How much the kept uploads may take together: ``STUDIO_SAVED_DB_MB`` (default 2048)."""
    raw = os.environ.get("STUDIO_SAVED_DB_MB", "").strip()
    try:
        mb = float(raw) if raw else DEFAULT_LIMIT_MB
    except ValueError:
        mb = DEFAULT_LIMIT_MB
    return int(max(mb, 0) * 1024 * 1024)


def server_folders() -> list[Path]:
    """The folders whose SQLite files may be registered by path (``STUDIO_SERVER_PATHS``)."""
    raw = os.environ.get("STUDIO_SERVER_PATHS", "")
    folders = []
    for part in raw.split(os.pathsep):
        part = part.strip()
        if part and os.path.isabs(os.path.expanduser(part)):
            folder = Path(os.path.realpath(os.path.expanduser(part)))
            if folder.is_dir():
                folders.append(folder)
    return folders


def server_paths_allowed() -> bool:
    return bool(server_folders())


def _mib(size: int) -> str:
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KiB"
    return f"{size / (1024 * 1024):.1f} MiB"


def _database_bytes(data: bytes, max_bytes: int) -> bytes:
    """The database an upload holds, as it was opened: a zip unpacked with its -wal merged in,
    and a WAL-mode header turned to rollback mode so the copy opens without side files."""
    if wal.is_zip(data):
        try:
            _, content, wal_data = wal.read_zip(data, max_bytes)
            data = wal.merge(content, wal_data) if wal_data else content
        except wal.WalError as exc:
            raise LibraryError(f"the upload cannot be kept: {exc}") from None
    if wal.is_wal_mode(bytes(data[:100])):
        data = wal.as_rollback_mode(data)
    return bytes(data)


def _file_stem(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._")[:60] or "database"


def _viewer(store):
    """Who is asking: a :class:`~agents.store.access.StoreView` says; a bare store is local."""
    return getattr(store, "viewer", LOCAL)


def free_name(store, name: str, path: str) -> str:
    """The name a new entry for ``path`` gets: ``name`` itself when no entry has it, or when
    the entry of that name is the same file and the caller may change it (a repeated upload);
    otherwise the first free ``name_2``, ``name_3``, ... Another user's database (or one the
    caller may not change) is never replaced."""
    viewer = _viewer(store)
    candidate, number = name, 1
    while True:
        entry = store.saved_entry(candidate)
        if entry is None or (entry["path"] == path and viewer.may_change(entry)):
            return candidate
        number += 1
        candidate = f"{name}_{number}"


def _remove_copy(store, path: str) -> None:
    """Delete a kept copy no entry uses any more, only ever inside the library folder."""
    if any(e["path"] == path for e in store.all_saved_entries()):
        return
    target = Path(path)
    if target.parent.resolve() != library_dir().resolve() or not target.is_file():
        return
    target.chmod(stat.S_IRUSR | stat.S_IWUSR)
    target.unlink()


STALE_PARTIAL_SECONDS = 600  # a copy still being written by another session is younger


def remove_stale_partials(folder: Path | None = None, *, older_than: float = STALE_PARTIAL_SECONDS
                          ) -> list[Path]:
    """Delete the half-written copies (``*.partial``) a killed server left in the library,
    which no entry lists and no size limit counts; the removed paths."""
    folder = folder or library_dir()
    removed = []
    try:
        leftovers = list(folder.glob("*.partial"))
    except OSError:
        return removed
    for path in leftovers:
        try:
            if time.time() - path.stat().st_mtime >= older_than:
                path.chmod(stat.S_IRUSR | stat.S_IWUSR)
                path.unlink()
                removed.append(path)
        except OSError:  # gone meanwhile, or not ours to remove: the next save tries again
            continue
    return removed


def save_upload(store, db: Database, file_name: str, data: bytes, *,
                max_bytes: int, shared: bool = False) -> dict:
    """Keep an upload that :meth:`Database.from_bytes` accepted as ``db``: a read-only copy in
    the library, listed under ``db.name``, or under a free name (:func:`free_name`) when a
    different database has that name, which is left as it is. ``shared`` makes it the team's.
    Raises :class:`LibraryError` when the library would exceed its size limit."""
    content = _database_bytes(data, max_bytes)
    remove_stale_partials()
    digest = hashlib.sha256(content).hexdigest()[:12]
    target = library_dir() / f"{_file_stem(db.name)}-{digest}.sqlite"
    name = free_name(store, db.name, str(target))
    others = sum(e["size_bytes"] or 0 for e in store.all_saved_entries()
                 if e["kind"] == "upload" and e["path"] != str(target))
    limit = library_limit_bytes()
    if others + len(content) > limit:
        raise LibraryError(
            f"{file_name} is not kept after a restart: the kept databases would take "
            f"{_mib(others + len(content))}, over the limit of {_mib(limit)}. Remove kept "
            "databases you no longer need, or raise STUDIO_SAVED_DB_MB.")
    if not target.exists():
        partial = target.with_suffix(".partial")
        try:
            partial.write_bytes(content)
            partial.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
            os.replace(partial, target)
        except OSError as exc:  # a full disk: no half-written copy stays outside the limit
            partial.unlink(missing_ok=True)
            raise LibraryError(f"{file_name} could not be kept after a restart: "
                               f"{exc.strerror or exc}") from None
    store.put_saved_database(name, "upload", str(target), file_name=file_name,
                             size_bytes=len(content), shared=shared)
    return store.saved_database(name)


def _protected() -> list[Path]:
    """Places a registered path may never lie in: the studio's home (its store of every
    user's runs, the kept uploads) and the model response cache (every session's prompts)."""
    places = [studio_home(), cache_dir()]
    cache_file = os.environ.get("STUDIO_LLM_CACHE_PATH", "").strip()
    if cache_file:
        places.append(Path(cache_file).expanduser())
    return [Path(os.path.realpath(p)) for p in places]


def allowed_server_file(typed: str) -> str:
    """The resolved path of ``typed`` when the server may open it: a readable regular file
    (never a pipe or a device), symlinks followed, inside a folder ``STUDIO_SERVER_PATHS``
    names and outside :func:`_protected`; else one :class:`LibraryError` whatever the reason,
    so the message does not tell what exists on the server."""
    folders = server_folders()
    if not folders:
        raise LibraryError("opening files on the server by path is turned off on this server "
                           "(STUDIO_SERVER_PATHS names the folders it may open)")
    if not typed:
        raise LibraryError("type the path of a SQLite file on the server")
    refused = LibraryError(f"no SQLite file this server may open at {typed} (it opens files "
                           "in " + ", ".join(str(f) for f in folders) + ")")
    try:
        path = Path(os.path.realpath(os.path.expanduser(typed)))
        if not any(path.is_relative_to(folder) for folder in folders) or any(
                path.is_relative_to(place) for place in _protected()):
            raise refused
        if not stat.S_ISREG(os.stat(path).st_mode) or not os.access(path, os.R_OK):
            raise refused
    except (OSError, ValueError):  # a missing file, a NUL byte in the path
        raise refused from None
    return str(path)


def register_path(store, path: str) -> tuple[dict, Database]:
    """Register a SQLite file on the server by its path (:func:`allowed_server_file`), after
    opening it read-only and checking it like any database; returns the entry and the open
    database. In team mode only admins do (like adding a connection in Metabase), and the
    entry is the team's; a name another entry has gets a free one (:func:`free_name`)."""
    viewer = _viewer(store)
    if viewer.team and not viewer.is_admin:
        raise LibraryError("only an admin adds files on the server to the studio")
    path = allowed_server_file((path or "").strip())
    try:
        db = open_database(path)
    except DatabaseError as exc:
        raise LibraryError(str(exc)) from None
    name = free_name(store, db.name, path)
    store.put_saved_database(name, "path", path, file_name=os.path.basename(path),
                             size_bytes=db.size_bytes, shared=True)
    db.name = name
    return store.saved_database(name), db


def open_saved(entry: dict) -> Database:
    """Open a kept upload or a registered file, read-only. A file that has gone away is a
    :class:`~agents.db.database.DatabaseError` saying so. A registered file is checked again
    as when it was registered (:func:`allowed_server_file`): the operator may have narrowed
    the folders since, or the path may lead elsewhere now; such an entry does not open."""
    path = entry["path"]
    if not os.path.exists(path):
        where = "kept copy" if entry["kind"] == "upload" else "file"
        raise DatabaseError(f"the {where} of {entry['name']} is missing ({path}); remove it "
                            "from the saved databases")
    if entry["kind"] == "path":
        try:
            if allowed_server_file(path) != path:
                raise LibraryError("the path leads elsewhere now")
        except LibraryError:
            raise DatabaseError(f"{entry['name']} ({path}) is not a file this server opens any "
                                "more; remove it from the saved databases") from None
    return open_database(path, name=entry["name"])


def remove(store, name: str) -> bool:
    """Forget a saved database; a kept copy is deleted, a registered server file is not
    touched."""
    entry = store.saved_database(name)
    if entry is None:
        return False
    store.drop_saved_database(name)
    if entry["kind"] == "upload":
        _remove_copy(store, entry["path"])
    return True
