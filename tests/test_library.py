"""Saved databases: kept uploads are read-only copies within a size limit that reopen after a
restart; server files are registered by path, opened read-only and never touched."""

from __future__ import annotations

import hashlib
import io
import os
import sqlite3
import stat
import zipfile

import pytest

from agents.db.database import Database, DatabaseError
from agents.db.library import (LibraryError, library_dir, open_saved, register_path, remove,
    save_upload)
from agents.store import Store

SQL = "CREATE TABLE pets (id INTEGER PRIMARY KEY, kind TEXT); INSERT INTO pets (kind) VALUES "\
      "('cat'), ('dog');"


def sqlite_file(path, sql=SQL, wal_mode=False):
    conn = sqlite3.connect(path)
    if wal_mode:
        conn.execute("PRAGMA journal_mode=WAL")
    conn.executescript(sql)
    conn.commit()
    conn.close()
    return path


@pytest.fixture
def store(isolated_studio, tmp_path, monkeypatch):
    """The studio's store, on a server that lets files in this test's folder be registered."""
    monkeypatch.setenv("STUDIO_SERVER_PATHS", str(tmp_path))
    with Store() as s:
        yield s


def keep(store, name, data):
    db = Database.from_bytes(name, data)
    try:
        return save_upload(store, db, name, data, max_bytes=len(data) + 1024 * 1024)
    finally:
        db.close()


def rows(db):
    return db.execute("SELECT kind FROM pets ORDER BY id").rows


def test_a_kept_upload_is_a_read_only_copy_that_reopens_after_a_restart(store, tmp_path):
    data = sqlite_file(tmp_path / "pets.sqlite").read_bytes()
    entry = keep(store, "pets.sqlite", data)
    assert entry["name"] == "pets" and entry["kind"] == "upload"
    copy = entry["path"]
    assert os.path.dirname(copy) == str(library_dir())
    assert not os.stat(copy).st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    path = store.path
    store.close()
    with Store(path) as again:  # a new process would see the same list
        [saved] = again.saved_databases()
        with open_saved(saved) as db:
            assert rows(db) == [("cat",), ("dog",)]
            assert db.execute("DELETE FROM pets").ok is False
    assert hashlib.sha256(open(copy, "rb").read()).digest() == hashlib.sha256(data).digest()


def test_a_zip_with_its_wal_is_kept_with_the_changes_merged(store, tmp_path):
    folder = tmp_path / "w"
    folder.mkdir()
    source = sqlite_file(folder / "live.sqlite", wal_mode=True)
    conn = sqlite3.connect(source)
    conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.execute("INSERT INTO pets (kind) VALUES ('owl')")
    conn.commit()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.write(source, "live.sqlite")
        archive.write(str(source) + "-wal", "live.sqlite-wal")
    conn.close()
    entry = keep(store, "live.zip", buffer.getvalue())
    with open_saved(entry) as db:
        assert ("owl",) in rows(db)
    assert sorted(os.listdir(library_dir())) == [os.path.basename(entry["path"])]


def test_kept_uploads_have_a_size_limit(store, tmp_path, monkeypatch):
    data = sqlite_file(tmp_path / "pets.sqlite").read_bytes()
    monkeypatch.setenv("STUDIO_SAVED_DB_MB", str(len(data) * 1.5 / (1024 * 1024)))
    keep(store, "pets.sqlite", data)
    keep(store, "pets.sqlite", data)  # the same name replaces itself: no extra room needed
    with pytest.raises(LibraryError, match="over the limit"):
        keep(store, "other.sqlite", data)
    assert [e["name"] for e in store.saved_databases()] == ["pets"]


def test_removing_deletes_a_kept_copy_but_never_a_registered_file(store, tmp_path):
    kept = keep(store, "pets.sqlite", sqlite_file(tmp_path / "pets.sqlite").read_bytes())
    server = sqlite_file(tmp_path / "server.db")
    before = server.read_bytes()
    entry, db = register_path(store, str(server))
    assert entry["kind"] == "path" and entry["path"] == str(server)
    assert rows(db) == [("cat",), ("dog",)]
    db.close()
    assert remove(store, "pets") and not os.path.exists(kept["path"])
    assert remove(store, "server") and server.read_bytes() == before
    assert not [n for n in os.listdir(tmp_path) if n.startswith("server.db-")]
    assert store.saved_databases() == [] and not remove(store, "server")


@pytest.mark.parametrize("path", ["/no/such/file.sqlite", "/tmp", "/etc/hostname", "{tmp}/nope.db",
                                  "{tmp}"])
def test_a_path_outside_the_folders_missing_or_a_folder_gets_one_and_the_same_message(
        store, tmp_path, path):
    """The message never tells a visitor whether something exists on the server."""
    typed = path.format(tmp=tmp_path)
    with pytest.raises(LibraryError) as caught:
        register_path(store, typed)
    assert str(caught.value) == (f"no SQLite file this server may open at {typed} (it opens "
                                 f"files in {os.path.realpath(tmp_path)})")
    with pytest.raises(LibraryError, match="type the path"):
        register_path(store, "  ")


def test_registration_is_off_unless_the_operator_names_folders(store, tmp_path, monkeypatch):
    ok = str(sqlite_file(tmp_path / "ok.db"))
    for value in ("", "0", "1", "true", "relative/folder"):
        monkeypatch.setenv("STUDIO_SERVER_PATHS", value)
        with pytest.raises(LibraryError, match="turned off"):
            register_path(store, ok)
    monkeypatch.delenv("STUDIO_SERVER_PATHS")
    with pytest.raises(LibraryError, match="turned off"):
        register_path(store, ok)


def test_the_studio_s_own_store_is_never_opened_even_through_a_symlink(store, tmp_path,
                                                                      monkeypatch,
                                                                      isolated_studio):
    link = tmp_path / "innocent.db"
    link.symlink_to(store.path)
    with pytest.raises(LibraryError, match="no SQLite file this server may open"):
        register_path(store, str(link))
    monkeypatch.setenv("STUDIO_SERVER_PATHS", os.pathsep.join([str(tmp_path),
                                                               str(isolated_studio)]))
    with pytest.raises(LibraryError, match="no SQLite file this server may open"):
        register_path(store, str(store.path))


def test_a_named_pipe_is_refused_without_blocking(store, tmp_path):
    fifo = tmp_path / "pipe.db"
    os.mkfifo(fifo)
    with pytest.raises(LibraryError, match="no SQLite file this server may open"):
        register_path(store, str(fifo))


def test_a_not_sqlite_server_file_is_refused(store, tmp_path):
    text = tmp_path / "notes.db"
    text.write_text("hello")
    with pytest.raises(LibraryError, match="not a SQLite database"):
        register_path(store, str(text))


def test_a_vanished_file_is_a_clear_error(store, tmp_path):
    server = sqlite_file(tmp_path / "gone.db")
    entry, db = register_path(store, str(server))
    db.close()
    server.unlink()
    with pytest.raises(DatabaseError, match="missing"):
        open_saved(store.saved_database("gone"))


def test_a_copy_that_cannot_be_written_leaves_no_partial_file(store, tmp_path, monkeypatch):
    from pathlib import Path

    data = sqlite_file(tmp_path / "pets.sqlite").read_bytes()
    real = Path.write_bytes

    def disk_full(self, content):
        if self.suffix == ".partial":
            real(self, content[:10])
            raise OSError(28, "No space left on device")
        return real(self, content)

    monkeypatch.setattr(Path, "write_bytes", disk_full)
    with pytest.raises(LibraryError, match="could not be kept after a restart: No space left"):
        keep(store, "pets.sqlite", data)
    assert list(library_dir().glob("*")) == [] and store.saved_databases() == []


def test_a_half_written_copy_a_killed_server_left_is_removed_by_the_next_save(store, tmp_path):
    import os
    import time

    library_dir().mkdir(parents=True, exist_ok=True)
    stale, fresh = library_dir() / "old-1234.partial", library_dir() / "new-5678.partial"
    for path in (stale, fresh):
        path.write_bytes(b"half a database")
    an_hour_ago = time.time() - 3600
    os.utime(stale, (an_hour_ago, an_hour_ago))
    keep(store, "pets.sqlite", sqlite_file(tmp_path / "pets.sqlite").read_bytes())
    assert not stale.exists()
    assert fresh.exists()  # another session may still be writing it


def test_an_entry_registered_before_the_rules_or_outside_them_now_does_not_open(
        store, tmp_path, monkeypatch, isolated_studio):
    """Registrations are checked again when opened: one made under laxer rules (the studio's
    own store, say) or whose folder the operator no longer names does not open."""
    store.put_saved_database("legacy", "path", str(store.path), file_name="studio.db",
                             size_bytes=1)
    with pytest.raises(DatabaseError, match="not a file this server opens any more"):
        open_saved(store.saved_database("legacy"))
    server = sqlite_file(tmp_path / "crm.db")
    entry, db = register_path(store, str(server))
    db.close()
    open_saved(entry).close()
    monkeypatch.setenv("STUDIO_SERVER_PATHS", str(isolated_studio / "elsewhere"))
    with pytest.raises(DatabaseError, match="not a file this server opens any more"):
        open_saved(entry)


def test_the_response_cache_and_odd_paths_are_refused_like_any_other(store, tmp_path,
                                                                     monkeypatch):
    cache = tmp_path / "cache" / "llm_cache.sqlite"
    cache.parent.mkdir()
    sqlite_file(cache)
    monkeypatch.setenv("STUDIO_LLM_CACHE_PATH", str(cache))
    for path in (str(cache), f"{tmp_path}/a\0b.db"):
        with pytest.raises(LibraryError, match="no SQLite file this server may open"):
            register_path(store, path)
