"""Opening databases: files and uploads, every kind of unusable input, read-only guarantees."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from agents.db.database import Database, DatabaseError, open_database
from dbfactory import SHOP_SQL, db_bytes, make_db, sha256

# Enough rows for a few dozen pages, so damage can land inside a table.
PAGES_SQL = """
CREATE TABLE t (id INTEGER PRIMARY KEY, s TEXT);
CREATE INDEX t_s ON t (s);
WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 3000)
INSERT INTO t SELECT x, printf('row %d %s', x, hex(randomblob(20))) FROM n;
"""
PAGE = 4096


@pytest.fixture
def shop_file(tmp_path):
    return make_db(tmp_path / "shop.sqlite", SHOP_SQL)


@pytest.fixture(scope="module")
def pages_bytes() -> bytes:
    return db_bytes(PAGES_SQL)


def _open_error(path: Path) -> str:
    with pytest.raises(DatabaseError) as info:
        open_database(path)
    return str(info.value)


def test_open_file_reads_without_changing_it(shop_file):
    before_hash, before_mtime = sha256(shop_file), os.stat(shop_file).st_mtime_ns
    db = open_database(shop_file)
    assert db.name == "shop" and db.path == str(shop_file)
    assert db.size_bytes == shop_file.stat().st_size
    assert db.schema.table_names() == ["customers", "products", "orders", "order_items",
                                       "big_spenders"]
    assert db.execute("SELECT name FROM customers WHERE id = 2").rows == [("Bob",)]
    db.close()
    assert sha256(shop_file) == before_hash
    assert os.stat(shop_file).st_mtime_ns == before_mtime
    assert sorted(p.name for p in shop_file.parent.iterdir()) == ["shop.sqlite"]


@pytest.mark.parametrize("file_name", ["with space.db", "what?.sqlite", "hash#tag.db",
                                       "100%.db", "é中文.sqlite"])
def test_paths_that_need_uri_quoting(tmp_path, file_name):
    path = make_db(tmp_path / file_name, SHOP_SQL)
    with open_database(path) as db:
        assert db.execute("SELECT count(*) FROM orders").rows == [(3,)]
    assert sorted(p.name for p in tmp_path.iterdir()) == [file_name]


def test_missing_file_and_folder(tmp_path):
    assert _open_error(tmp_path / "nope.sqlite").endswith("nope.sqlite: no such file")
    assert "is a folder, not a SQLite database file" in _open_error(tmp_path)


def test_not_sqlite_empty_and_encrypted(tmp_path):
    text = tmp_path / "notes.csv"
    text.write_text("a,b\n1,2\n")
    assert _open_error(text) == (
        "notes.csv: not a SQLite database (it may be encrypted or another format)")
    random_bytes = tmp_path / "secret.db"
    random_bytes.write_bytes(os.urandom(8192))
    assert "not a SQLite database (it may be encrypted" in _open_error(random_bytes)
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    assert _open_error(empty) == "empty.db: the file is empty (0 bytes), not a SQLite database"


def test_truncated_files(tmp_path, pages_bytes):
    half = tmp_path / "half.db"
    half.write_bytes(pages_bytes[: len(pages_bytes) // 2])
    assert "the database file is damaged (" in _open_error(half)
    assert "cut off" in _open_error(half)
    header_only = tmp_path / "header.db"
    header_only.write_bytes(pages_bytes[:100])
    assert "the database file is damaged" in _open_error(header_only)
    stub = tmp_path / "stub.db"
    stub.write_bytes(pages_bytes[:10])
    assert _open_error(stub) == "stub.db: the database file is damaged (only 10 bytes long)"


def test_damaged_catalogue_and_damaged_table_pages(tmp_path, pages_bytes):
    catalogue = bytearray(pages_bytes)
    catalogue[100:200] = b"\xff" * 100  # the sqlite_master page just after the file header
    path = tmp_path / "catalogue.db"
    path.write_bytes(bytes(catalogue))
    assert _open_error(path).startswith("catalogue.db: the database file is damaged (")

    table_page = bytearray(pages_bytes)
    table_page[5 * PAGE + 8: 5 * PAGE + 400] = bytes(range(256)) + bytes(range(136))
    path = tmp_path / "page.db"
    path.write_bytes(bytes(table_page))
    message = _open_error(path)
    assert message.startswith("page.db: the database file is damaged (") and "\n" not in message


def test_database_without_tables(tmp_path):
    path = tmp_path / "blank.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE gone (a)")
    conn.execute("DROP TABLE gone")
    conn.close()
    assert _open_error(path) == "blank.db: the database has no tables"


def test_from_bytes_copies_the_upload():
    data = bytearray(db_bytes(SHOP_SQL))
    original = bytes(data)
    db = Database.from_bytes("uploads/shop.sqlite", data)
    assert db.name == "shop" and db.path is None and db.size_bytes == len(original)
    assert db.execute("SELECT count(*) FROM customers").rows == [(5,)]
    assert db.execute("DELETE FROM customers").error_class == "UnsafeSQL"
    assert db.execute("SELECT count(*) FROM customers").rows == [(5,)]
    assert bytes(data) == original


def test_from_bytes_rejects_garbage_and_oversize():
    with pytest.raises(DatabaseError, match=r"^junk\.db: not a SQLite database"):
        Database.from_bytes("junk.db", os.urandom(4096))
    with pytest.raises(DatabaseError, match="the file is empty"):
        Database.from_bytes("nothing.db", b"")
    data = db_bytes(SHOP_SQL)
    with pytest.raises(DatabaseError, match=r"too large \(0\.0 MiB; the limit is 0\.0 MiB\)"):
        Database.from_bytes("shop.db", data, max_bytes=len(data) - 1)
    with pytest.raises(DatabaseError, match="the database file is damaged"):
        Database.from_bytes("half.db", data[: len(data) // 2])


def test_from_bytes_of_a_wal_mode_database(tmp_path):
    path = tmp_path / "wal.db"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.executescript(SHOP_SQL)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    data = path.read_bytes()
    assert data[18:20] == b"\x02\x02"
    db = Database.from_bytes("wal.db", data)
    assert db.execute("SELECT count(*) FROM products").rows == [(3,)]


def test_table_preview_and_unknown_table():
    db = Database.from_bytes("shop.db", db_bytes(SHOP_SQL))
    preview = db.table_preview("ORDERS", limit=2)
    assert preview.ok and preview.columns == ["order_id", "customer", "placed_on"]
    assert preview.rows == [(10, 1, "2024-01-02"), (11, 2, "2024-02-03")] and preview.truncated
    missing = db.table_preview("no such")
    assert not missing.ok and missing.error == "no such table: no such"


def test_closed_database_reports_instead_of_raising():
    db = Database.from_bytes("shop.db", db_bytes(SHOP_SQL))
    db.close()
    result = db.execute("SELECT 1")
    assert not result.ok and result.error_class == "ProgrammingError"
