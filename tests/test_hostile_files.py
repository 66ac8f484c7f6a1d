"""A hostile-input run, part two: dozens of generated database files.

Each file is opened from a path (with its ``-wal`` beside it, when it has one) and from uploaded
bytes. Whatever the file, opening either succeeds within the integrity check's time or fails
with one clear line; the schema is read within its budget; reading every table stays within the
statement limit and the byte budget; the file's bytes are unchanged and no file appears beside
it. The checks are those of ``hostile_checks.py``, as in ``test_hostile_statements.py``.
"""

from __future__ import annotations

import io
import json
import os
import random
import sqlite3
import time
import zipfile
from pathlib import Path

import pytest

from agents.db import database, introspection
from agents.db.database import Database, DatabaseError, open_database
from agents.db.identifiers import quote_identifier
from dbfactory import SHOP_SQL, db_bytes
from hostile_checks import LIMIT, SLACK, check_result, clear_message, listing

# -- files ------------------------------------------------------------------------------------

SLOW = "printf('%.*c', 2000000, 'a') LIKE '%' || printf('%.*c', 10000, 'a') || 'b'"
ODD_NAMES = ["![x](http://example.invalid/p.png)", "<img src=x onerror=alert(1)>", ":red[big]",
             "$x^2$", "# heading", "[link](javascript:alert(1))", "line\nbreak", "tab\there",
             "quote\"s", "back`tick", "\u202eevil", "x" * 5000, "www.example.invalid",
             "*bold* _it_ ~strike~"]


def _script_bytes(script: str) -> bytes:
    return db_bytes(script)


def _wal_pair(script: str, checkpoint: bool) -> tuple[bytes, bytes]:
    """The main file and the -wal of a WAL-mode database, as a copy taken while in use."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "w.db")
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.executescript(script)
        if checkpoint:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        main = Path(path).read_bytes()
        wal = Path(path + "-wal").read_bytes() if os.path.exists(path + "-wal") else b""
        conn.close()
    return main, wal


def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def _corrupt(data: bytes, at: int, length: int = 400) -> bytes:
    damaged = bytearray(data)
    damaged[at:at + length] = bytes((i * 37) % 256 for i in range(length))
    return bytes(damaged)


def _zip_bomb() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("bomb.db", "w", force_zip64=True) as handle:
            chunk = bytes(1 << 20)
            for _ in range(201):
                handle.write(chunk)
    return buffer.getvalue()


def hostile_files() -> list[tuple[str, bytes, bytes | None, str]]:
    """(file name, bytes, its -wal bytes or None, "open" | "refuse" | "either")."""
    shop = _script_bytes(SHOP_SQL)
    pages = _script_bytes("CREATE TABLE t (id INTEGER PRIMARY KEY, s TEXT);"
                          "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n "
                          "WHERE x < 3000) INSERT INTO t SELECT x, hex(randomblob(20)) FROM n;")
    odd = "".join(f'CREATE TABLE "{n.replace(chr(34), chr(34) * 2)}" '
                  f'("{n.replace(chr(34), chr(34) * 2)}" TEXT); ' for n in ODD_NAMES)
    odd += "INSERT INTO \"![x](http://example.invalid/p.png)\" VALUES ('![y](http://x.invalid)');"
    wal_main, wal_log = _wal_pair(SHOP_SQL, checkpoint=False)
    wal_done, _ = _wal_pair(SHOP_SQL, checkpoint=True)
    many = "".join(f"CREATE TABLE t{i} (a INTEGER, b TEXT); INSERT INTO t{i} VALUES ({i}, 'x');"
                   for i in range(300))
    chain = "CREATE TABLE base (a); INSERT INTO base VALUES (1);" + "".join(
        f"CREATE VIEW v{i} AS SELECT * FROM {'base' if i == 0 else f'v{i - 1}'};"
        for i in range(100))
    missing_module = _script_bytes(
        "CREATE TABLE ok (a); PRAGMA writable_schema = ON; INSERT INTO sqlite_master VALUES "
        "('table', 'ghost', 'ghost', 0, 'CREATE VIRTUAL TABLE ghost USING nosuchmodule(x)');")
    files = [
        ("shop.sqlite", shop, None, "open"),
        ("slow_view.db", _script_bytes(SHOP_SQL + f"CREATE VIEW slow AS SELECT {SLOW} AS x;"),
         None, "open"),
        ("slow_views.db", _script_bytes("CREATE TABLE t (a); INSERT INTO t VALUES (1);" + "".join(
            f"CREATE VIEW s{i} AS SELECT {SLOW} AS x;" for i in range(4))), None, "open"),
        ("forever.db", _script_bytes(
            "CREATE TABLE t (a); CREATE VIEW forever AS WITH RECURSIVE c(x) AS "
            "(SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c;"), None, "open"),
        ("cross.db", _script_bytes(
            "CREATE TABLE t (a); WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
            "WHERE x < 2000) INSERT INTO t SELECT x FROM c; "
            "CREATE VIEW heavy AS SELECT count(*) AS n FROM t a, t b, t c;"), None, "open"),
        ("huge_cells.db", _script_bytes(
            "CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT, data BLOB);"
            "INSERT INTO t VALUES (1, printf('%.*c', 10000000, 'x'), zeroblob(20000000));"),
         None, "open"),
        ("denied_in_view.db", _script_bytes(
            "CREATE TABLE t (a); INSERT INTO t VALUES (1);"
            "CREATE VIEW v AS SELECT load_extension('x') AS a;"), None, "open"),
        ("odd_names.db", _script_bytes(odd), None, "open"),
        ("many_tables.db", _script_bytes(many), None, "open"),
        ("view_chain.db", _script_bytes(chain), None, "open"),
        ("wide_view.db", _script_bytes("CREATE TABLE t (a); CREATE VIEW wide AS SELECT " + ", "
                                       .join(f"{i} AS c{i}" for i in range(1999)) + ";"),
         None, "open"),
        ("triggers.db", _script_bytes(
            SHOP_SQL + "CREATE TRIGGER tr AFTER INSERT ON orders BEGIN DELETE FROM customers; END;"
            "CREATE INDEX ix ON customers (lower(name));"), None, "open"),
        ("fts.db", _script_bytes("CREATE VIRTUAL TABLE docs USING fts5(body);"
                                 "INSERT INTO docs VALUES ('hello');"), None, "open"),
        ("missing_module.db", missing_module, None, "open"),
        ("kinds.db", _script_bytes(
            "CREATE TABLE s (a INTEGER, b TEXT) STRICT; CREATE TABLE w (k TEXT PRIMARY KEY, v) "
            "WITHOUT ROWID; CREATE TABLE g (a, b AS (a * 2) STORED, c AS (a || 'x'));"
            "INSERT INTO g (a) VALUES (1);"), None, "open"),
        ("utf16.db", _utf16(), None, "open"),
        ("big_pages.db", _big_pages(), None, "open"),
        ("broken_views.db", _script_bytes("CREATE TABLE gone (a); CREATE VIEW v1 AS SELECT a "
                                          "FROM gone; CREATE VIEW v2 AS SELECT * FROM v1; "
                                          "DROP TABLE gone;"), None, "refuse"),
        ("no_tables.db", _script_bytes("PRAGMA user_version = 3;"), None, "refuse"),
        ("wal_pending.db", wal_main, wal_log, "open"),
        ("wal_pending_alone.db", wal_main, None, "refuse"),
        ("wal_checkpointed.db", wal_done, None, "open"),
        ("wal_pair.zip", _zip({"w.db": wal_main, "w.db-wal": wal_log}), None, "open"),
        ("plain.zip", _zip({"shop.sqlite": shop}), None, "open"),
        ("two.zip", _zip({"a.db": shop, "b.db": shop}), None, "refuse"),
        ("wrong_wal.zip", _zip({"a.db": wal_main, "b.db-wal": wal_log}), None, "refuse"),
        ("traversal.zip", _zip({"../../evil.db": shop}), None, "open"),
        ("notes.zip", _zip({"notes.txt": b"hello"}), None, "refuse"),
        ("bomb.zip", _zip_bomb(), None, "refuse"),
        ("bad.zip", b"PK\x03\x04" + os.urandom(500), None, "refuse"),
        ("half.db", pages[: len(pages) // 2], None, "refuse"),
        ("header.db", pages[:100], None, "refuse"),
        ("stub.db", pages[:10], None, "refuse"),
        ("random.db", random.Random(1).randbytes(8192), None, "refuse"),
        ("empty.db", b"", None, "refuse"),
        ("catalogue.db", _corrupt(pages, 100), None, "refuse"),
        ("page.db", _corrupt(pages, 5 * 4096 + 8), None, "either"),
        ("text.db", b"SQLite format 3\x00 but then just text " * 200, None, "refuse"),
    ]
    return files


def _utf16() -> bytes:
    conn = sqlite3.connect(":memory:")
    conn.execute("PRAGMA encoding = 'UTF-16le'")
    conn.executescript("CREATE TABLE t (s TEXT); INSERT INTO t VALUES ('héllo'), ('世界');")
    data = conn.serialize()
    conn.close()
    return data


def _big_pages() -> bytes:
    conn = sqlite3.connect(":memory:")
    conn.execute("PRAGMA page_size = 65536")
    conn.executescript(SHOP_SQL)
    conn.execute("VACUUM")
    data = conn.serialize()
    conn.close()
    return data


@pytest.fixture(scope="module")
def fast_budgets():
    saved = (introspection.INTROSPECTION_BUDGET, introspection.QUERY_BUDGET,
             database.QUICK_CHECK_SECONDS)
    introspection.INTROSPECTION_BUDGET, introspection.QUERY_BUDGET = 1.5, 0.5
    database.QUICK_CHECK_SECONDS = 0.5
    yield
    (introspection.INTROSPECTION_BUDGET, introspection.QUERY_BUDGET,
     database.QUICK_CHECK_SECONDS) = saved


def open_both_ways(name: str, data: bytes, wal: bytes | None, folder: Path) -> list[dict]:
    """Open the file from a path (not for zips) and from bytes: outcome, seconds, message."""
    outcomes = []
    openers = [("bytes", lambda: Database.from_bytes(name, bytearray(data)))]
    if not name.endswith(".zip"):
        path = folder / name
        path.write_bytes(data)
        if wal is not None:
            Path(str(path) + "-wal").write_bytes(wal)
        openers.append(("path", lambda: open_database(path)))
    for how, opener in openers:
        started = time.perf_counter()
        try:
            db = opener()
        except DatabaseError as exc:
            outcomes.append({"how": how, "opened": False, "message": str(exc),
                             "open_seconds": time.perf_counter() - started})
            continue
        opened = time.perf_counter() - started
        started = time.perf_counter()
        schema = db.schema
        outcome = {"how": how, "opened": True, "open_seconds": opened, "db": db,
                   "schema_seconds": time.perf_counter() - started, "tables": len(schema.tables)}
        outcomes.append(outcome)
    return outcomes


FILES = hostile_files()


@pytest.mark.parametrize("name, data, wal, expected", FILES, ids=[f[0] for f in FILES])
def test_generated_files(tmp_path, fast_budgets, name, data, wal, expected):
    folder = tmp_path / "files"
    folder.mkdir()
    original = bytes(data)
    outcomes = open_both_ways(name, data, wal, folder)
    before = listing(folder)
    for outcome in outcomes:
        where = f"{name} from {outcome['how']}"
        # an upload carries no -wal beside it: a database whose data is there is refused
        wanted = "refuse" if wal is not None and outcome["how"] == "bytes" else expected
        assert outcome["open_seconds"] < (database.QUICK_CHECK_SECONDS + SLACK + 1.0), where
        if not outcome["opened"]:
            assert wanted in ("refuse", "either"), f"{where}: {outcome['message']}"
            assert clear_message(outcome["message"]), outcome["message"]
            continue
        assert wanted in ("open", "either"), where
        assert outcome["schema_seconds"] < introspection.INTROSPECTION_BUDGET + SLACK, where
        db = outcome["db"]
        problems = []
        for table in db.schema.table_names()[:20]:
            started = time.perf_counter()
            result = db.execute(f"SELECT * FROM {quote_identifier(table)} LIMIT 6",
                                timeout=LIMIT, max_rows=5)
            problems += check_result(result, f"preview {table!r:.60}",
                                     time.perf_counter() - started, LIMIT)
            json.dumps(result.preview(rows=5))
        db.close()
        assert problems == [], where
    assert data == original
    assert listing(folder) == before, name


def test_a_wal_database_with_pending_changes_shows_all_of_them(tmp_path):
    main, wal = _wal_pair(SHOP_SQL, checkpoint=False)
    assert Database.from_bytes("w.zip", _zip({"w.db": main, "w.db-wal": wal})).execute(
        "SELECT count(*) FROM customers").rows == [(5,)]
    (tmp_path / "w.db").write_bytes(main)
    (tmp_path / "w.db-wal").write_bytes(wal)
    with open_database(tmp_path / "w.db") as db:
        assert db.execute("SELECT count(*) FROM customers").rows == [(5,)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.db", "w.db-wal"]
    with pytest.raises(DatabaseError) as info:
        Database.from_bytes("w.db", main)
    assert "WAL mode" in str(info.value) and ".zip" in str(info.value)
    done, _ = _wal_pair(SHOP_SQL, checkpoint=True)
    db = Database.from_bytes("done.db", done)
    assert db.execute("SELECT count(*) FROM customers").rows == [(5,)]
    assert "WAL-mode" in db.notice and ".zip" in db.notice
    plain = Database.from_bytes("plain.db", db_bytes(SHOP_SQL))
    assert plain.notice is None
