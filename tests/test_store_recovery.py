"""The app's store opening: a damaged file is moved aside (never silently replaced), an
unwritable one is opened read-only, an empty one is moved aside with a notice that says so."""

from __future__ import annotations

import os
import time

import pytest

from agents.core.events import Run
from agents.store import Store, StoreError
from agents.store import recovery
from agents.store.connection import UNWRITABLE


def test_a_damaged_store_is_moved_aside_and_a_fresh_one_starts(tmp_path):
    path = tmp_path / "studio.db"
    garbage = b"SQLite format 3\x00" + b"\xff" * 4000
    path.write_bytes(garbage)
    store, notice = recovery.open_for_app(path)
    with store:
        assert store.list_runs() == []
    [aside] = [p for p in tmp_path.iterdir() if ".damaged-" in p.name]
    assert aside.read_bytes() == garbage  # kept as it was
    assert f"moved to `{aside}`" in notice and ".recover" in notice


def test_an_empty_store_is_moved_aside_and_the_notice_says_its_runs_are_gone(tmp_path):
    empty = tmp_path / "studio.db"
    empty.write_bytes(b"")
    os.utime(empty, (time.time() - 60, time.time() - 60))  # not one being created just now
    store, notice = recovery.open_for_app(empty)
    with store:
        assert store.list_runs() == []
    [aside] = [p for p in tmp_path.iterdir() if ".damaged-" in p.name]
    assert aside.read_bytes() == b""
    assert notice.startswith(f"The run store `{empty}` was empty (0 bytes)")
    assert f"moved to `{aside}`" in notice and "copy a backup over" in notice


def test_a_store_another_process_is_creating_is_waited_for_not_moved(tmp_path):
    import threading

    path = tmp_path / "studio.db"
    path.write_bytes(b"")  # just created by another process, not yet written

    def create():
        time.sleep(0.6)
        path.unlink()
        with Store(path) as other:
            other.save_run(Run(pipeline="baseline", question="First?", db_name="shop"))

    creator = threading.Thread(target=create)
    creator.start()
    store, notice = recovery.open_for_app(path)
    creator.join()
    with store:
        assert notice is None and [r["question"] for r in store.list_runs()] == ["First?"]
    assert not [p for p in tmp_path.iterdir() if ".damaged-" in p.name]


def test_an_unwritable_store_opens_read_only_and_every_save_says_why(tmp_path, monkeypatch):
    path = tmp_path / "studio.db"
    with Store(path) as store:
        store.save_run(Run(pipeline="baseline", question="How many?", db_name="shop"))
    real = recovery.Store

    def full_disk(p, read_only=None):  # what SQLite says on a full disk (root ignores chmod)
        if read_only is None:
            raise StoreError("The run store cannot be written: database or disk is full.",
                             UNWRITABLE)
        return real(p, read_only=read_only)

    monkeypatch.setattr(recovery, "Store", full_disk)
    store, notice = recovery.open_for_app(path)
    assert notice.startswith("Read-only: The run store cannot be written")
    with store:
        assert [r["question"] for r in store.list_runs()] == ["How many?"]
        with pytest.raises(StoreError, match="Nothing can be saved: The run store cannot"):
            store.save_run(Run(pipeline="baseline", question="Again?", db_name="shop"))
        with pytest.raises(StoreError, match="Nothing can be saved"):
            store.add_note("shop", "status = 1")


@pytest.fixture
def small_disk(tmp_path):
    """A 400 KiB tmpfs (needs the right to mount; skipped without it)."""
    import subprocess

    where = tmp_path / "disk"
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=400k", "tmpfs", str(where)],
                          capture_output=True)
    if done.returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    yield where
    subprocess.run(["umount", "-l", str(where)], capture_output=True)


def _fill(folder) -> None:
    handle = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(handle, b"\0" * 4096):
            pass
    except OSError:  # no space left: the disk is full
        pass
    finally:
        os.close(handle)


def test_a_full_disk_loses_nothing_and_says_so(small_disk):
    path = small_disk / "studio.db"
    with Store(path) as store:
        kept = store.save_run(Run(pipeline="baseline", question="How many?", db_name="shop"))
    _fill(small_disk)
    store, notice = recovery.open_for_app(path)
    with store:
        assert [r["run_id"] for r in store.list_runs()] == [kept]
        with pytest.raises(Exception, match="full|Nothing can be saved"):
            for n in range(200):  # until the pages the store had spare are used up
                store.save_run(Run(pipeline="baseline", question="x" * 2000 + str(n),
                                   db_name="shop"))
    assert notice is None or notice.startswith("Read-only:")
    (small_disk / "filler").unlink()
    with Store(path) as again:
        assert kept in [r["run_id"] for r in again.list_runs()]


def test_a_store_another_process_holds_is_never_moved_aside(tmp_path, monkeypatch):
    import sqlite3

    from agents.store import connection
    from agents.store.connection import BUSY

    monkeypatch.setattr(connection, "BUSY_TIMEOUT_S", 0.2)
    path = tmp_path / "studio.db"
    Store(path).close()
    holder = sqlite3.connect(path)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StoreError) as caught:
            recovery.open_for_app(path)
    finally:
        holder.rollback()
        holder.close()
    assert caught.value.kind == BUSY and "try again" in str(caught.value)
    assert sorted(p.name for p in tmp_path.iterdir() if "damaged" in p.name) == []


def test_a_store_from_a_newer_studio_is_left_exactly_as_it_is(tmp_path):
    path = tmp_path / "studio.db"
    with Store(path) as store:
        store.db["meta"].upsert({"key": "schema_version", "value": "999"}, pk="key")
    before = path.read_bytes()
    with pytest.raises(StoreError) as caught:
        recovery.open_for_app(path)
    assert caught.value.kind == "newer" and "newer version of the studio" in str(caught.value)
    assert path.read_bytes() == before
    assert not [p for p in tmp_path.iterdir() if ".damaged-" in p.name]
