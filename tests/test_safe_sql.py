"""The read-only gate, the authorizer behind it, deadlines, row caps and result previews."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time

import pytest

from agents.db.database import Database, open_database
from agents.db.safe_sql import (ExecResult, UnsafeSQLError, check_sql, execute_readonly,
    install_guards)
from dbfactory import SHOP_SQL, db_bytes, make_db, sha256

# Every kind of statement that must never run, with words its refusal must contain.
NOT_ALLOWED = "statements are not allowed: only read-only queries run"
REFUSED = [
    ("INSERT INTO customers VALUES (9, 'Zed', NULL, NULL, NULL)", f"INSERT {NOT_ALLOWED}"),
    ("UPDATE customers SET name = 'x'", f"UPDATE {NOT_ALLOWED}"),
    ("DELETE FROM customers", f"DELETE {NOT_ALLOWED}"),
    ("DROP TABLE customers", f"DROP {NOT_ALLOWED}"),
    ("CREATE TABLE evil (a)", f"CREATE {NOT_ALLOWED}"),
    ("CREATE VIEW v2 AS SELECT 1", f"CREATE {NOT_ALLOWED}"),
    ("CREATE INDEX ix ON customers (name)", f"CREATE {NOT_ALLOWED}"),
    ("CREATE TEMP TABLE scratch AS SELECT * FROM customers", f"CREATE {NOT_ALLOWED}"),
    ("CREATE TRIGGER tr AFTER INSERT ON orders BEGIN DELETE FROM customers; END",
     f"CREATE {NOT_ALLOWED}"),
    ("ALTER TABLE customers ADD COLUMN age INTEGER", f"ALTER {NOT_ALLOWED}"),
    ("ATTACH DATABASE 'other.db' AS other", "ATTACH is not allowed"),
    ("DETACH DATABASE other", "DETACH is not allowed"),
    ("PRAGMA journal_mode=DELETE", "PRAGMA statements are not allowed"),
    ("PRAGMA query_only=OFF", "PRAGMA statements are not allowed"),
    ("VACUUM", f"VACUUM {NOT_ALLOWED}"),
    ("VACUUM INTO 'copy.db'", f"VACUUM {NOT_ALLOWED}"),
    ("REINDEX", f"REINDEX {NOT_ALLOWED}"),
    ("ANALYZE", f"ANALYZE {NOT_ALLOWED}"),
    ("SELECT load_extension('x')", "load_extension() is not allowed"),
    ("SELECT \"load_extension\"('x')", "load_extension() is not allowed"),
    ("SELECT 1; DROP TABLE customers", "several statements"),
    ("SELECT 1; SELECT 2;", "several statements"),
    ("BEGIN", "transaction control (BEGIN)"),
    ("COMMIT", "transaction control (COMMIT)"),
    ("SAVEPOINT s1", "transaction control (SAVEPOINT)"),
    ("REPLACE INTO customers VALUES (1, 'x', NULL, NULL, NULL)", f"REPLACE {NOT_ALLOWED}"),
    ("INSERT OR REPLACE INTO customers (id, name) VALUES (1, 'x')", f"INSERT {NOT_ALLOWED}"),
    ("WITH x AS (SELECT 1) INSERT INTO orders SELECT 99, 1, NULL FROM x", f"INSERT {NOT_ALLOWED}"),
    ("WITH x AS (SELECT 1) DELETE FROM customers", f"DELETE {NOT_ALLOWED}"),
    ("WITH d AS (DELETE FROM orders RETURNING *) SELECT * FROM d", f"DELETE {NOT_ALLOWED}"),
    # sqlglot cannot parse UPDATE OR IGNORE: the write is still recognised
    ("WITH x AS (SELECT 1) UPDATE OR IGNORE customers SET name = 'x'", f"UPDATE {NOT_ALLOWED}"),
    ("UPDATE OR IGNORE customers SET name = 'x'", f"UPDATE {NOT_ALLOWED}"),
    ("/* harmless? */ DELETE FROM orders", f"DELETE {NOT_ALLOWED}"),
    ("EXPLAIN DELETE FROM orders", "EXPLAIN is not supported"),
    ("   ", "empty"),
    ("-- only a comment", "empty"),
]


@pytest.fixture
def shop_file(tmp_path):
    return make_db(tmp_path / "shop.sqlite", SHOP_SQL)


def _with_paths_in(folder, sql: str) -> str:
    """Point the file names in ATTACH / VACUUM INTO at ``folder`` (a write there would show)."""
    for name in ("other.db", "copy.db"):
        sql = sql.replace(f"'{name}'", "'" + str(folder / name).replace("'", "''") + "'")
    return sql


@pytest.mark.parametrize("sql", [
    "SELECT 1",
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3) SELECT x FROM c",
    "SELECT name FROM customers UNION SELECT title FROM products",
    "SELECT city FROM customers INTERSECT SELECT city FROM customers",
    "SELECT id FROM customers EXCEPT SELECT customer FROM orders",
    "VALUES (1), (2)",
    "SELECT replace(name, 'a', 'b') FROM customers",
    "SELECT 'DROP TABLE t; DELETE' AS text",
    "SELECT CASE WHEN price > 10 THEN 'high' ELSE 'low' END FROM products",
    "SELECT `order`, \"group\" FROM \"select\"",
    "SELECT row_number() OVER (PARTITION BY city ORDER BY name) FROM customers",
])
def test_read_only_queries_pass_the_gate(sql):
    assert check_sql(sql) == sql


def test_trailing_semicolons_whitespace_and_comments_are_trimmed():
    assert check_sql("  SELECT 'a;b' AS x ;  -- the end\n") == "SELECT 'a;b' AS x"
    assert check_sql("/* lead */ SELECT 2 ;;\n") == "SELECT 2"
    commented = "SELECT 1 -- a comment\nFROM customers"
    assert check_sql(commented) == commented


@pytest.mark.parametrize("sql,reason", REFUSED)
def test_gate_refuses_every_non_query_with_a_clear_reason(sql, reason):
    with pytest.raises(UnsafeSQLError) as info:
        check_sql(sql)
    assert reason in info.value.reason
    if "empty" not in reason:
        assert "not" in info.value.reason or "several" in info.value.reason


def test_refused_statements_never_change_the_file(shop_file, tmp_path):
    before_hash, before_mtime = sha256(shop_file), os.stat(shop_file).st_mtime_ns
    db = open_database(shop_file)
    for sql, reason in REFUSED:
        result = db.execute(_with_paths_in(tmp_path, sql))
        assert not result.ok and result.error_class == "UnsafeSQL", sql
        assert reason in result.error
    assert db.execute("SELECT count(*) FROM customers").rows == [(5,)]
    db.close()
    assert sha256(shop_file) == before_hash
    assert os.stat(shop_file).st_mtime_ns == before_mtime
    assert not (tmp_path / "other.db").exists() and not (tmp_path / "copy.db").exists()


def test_authorizer_alone_blocks_writes_even_on_a_writable_connection(shop_file, tmp_path):
    """The second wall: with the gate bypassed and a read-write connection, nothing is written."""
    before = sha256(shop_file)
    conn = sqlite3.connect(shop_file, isolation_level=None)
    install_guards(conn)
    for sql, _ in REFUSED:
        if not sql.strip() or sql.lstrip().startswith("--") or ";" in sql:
            continue
        with pytest.raises(sqlite3.DatabaseError):
            conn.execute(_with_paths_in(tmp_path, sql)).fetchall()
    with pytest.raises(sqlite3.DatabaseError):
        conn.execute("SELECT 1; DROP TABLE customers")
    with pytest.raises(sqlite3.DatabaseError):
        conn.execute("WITH x AS (SELECT 1) SELECT * FROM x; INSERT INTO orders VALUES (1, 1, 1)")
    with pytest.raises(sqlite3.DatabaseError):
        conn.execute("UPDATE sqlite_master SET sql = 'x'")
    assert conn.execute("SELECT count(*) FROM orders").fetchone() == (3,)
    conn.close()
    assert sha256(shop_file) == before
    assert not (tmp_path / "other.db").exists() and not (tmp_path / "copy.db").exists()


def test_parse_errors_reach_sqlite_for_a_real_error_message(shop_file):
    db = open_database(shop_file)
    result = db.execute("SELEC * FORM customers")
    assert not result.ok and result.error_class == "OperationalError"
    assert "syntax error" in result.error
    unclosed = db.execute("SELECT 'abc FROM customers")
    assert not unclosed.ok and unclosed.error_class == "OperationalError"


def test_sql_errors_come_back_with_message_and_class(shop_file):
    db = open_database(shop_file)
    result = db.execute("SELECT nope FROM customers")
    assert result.ok is False
    assert result.error == "no such column: nope"
    assert result.error_class == "OperationalError"
    assert db.execute("SELECT * FROM missing_table").error == "no such table: missing_table"
    assert db.execute(None).error_class == "UnsafeSQL"


def test_runaway_query_is_stopped_at_the_time_limit(shop_file):
    db = open_database(shop_file)
    started = time.perf_counter()
    result = db.execute("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
                        "SELECT count(*) FROM c", timeout=0.5)
    elapsed = time.perf_counter() - started
    assert not result.ok and result.error_class == "Timeout"
    assert result.error == "the query ran longer than 0.5 s and was stopped"
    assert 0.4 < elapsed < 3.0
    cross = db.execute("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
                       "WHERE x < 100000) SELECT count(*) FROM c a, c b", timeout=0.3)
    assert cross.error_class == "Timeout"
    # the connection is fine afterwards, and a stale interrupt does not hit the next query
    time.sleep(0.4)
    assert db.execute("SELECT count(*) FROM orders").rows == [(3,)]


def test_row_cap_sets_truncated():
    db = Database.from_bytes("shop.sqlite", db_bytes(SHOP_SQL))
    series = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < {n}) "
              "SELECT x FROM c")
    capped = db.execute(series.format(n=5000), max_rows=100)
    assert capped.ok and capped.truncated and capped.row_count == 100
    assert capped.rows[0] == (1,) and capped.rows[-1] == (100,)
    exact = db.execute(series.format(n=100), max_rows=100)
    assert exact.ok and not exact.truncated and exact.row_count == 100
    assert db.table_preview("customers", limit=2).rows == [
        (1, "Ada", None, "a note that is much longer than forty characters, really it is",
         b"\x00\xff"),
        (2, "Bob", "Paris", None, None)]


def test_preview_is_json_safe_and_dataframe_keeps_columns():
    db = Database.from_bytes("shop.sqlite", db_bytes(SHOP_SQL))
    result = db.execute(
        "SELECT id, photo, 1.5 AS f, NULL AS n, 1e999 AS big FROM customers ORDER BY id")
    preview = result.preview(rows=2)
    assert preview["rows"] == [[1, "<blob 2 bytes>", 1.5, None, "inf"], [2, None, 1.5, None, "inf"]]
    assert preview["row_count"] == 5 and preview["columns"] == ["id", "photo", "f", "n", "big"]
    json.dumps(preview, allow_nan=False)
    frame = result.to_dataframe()
    assert list(frame.columns) == ["id", "photo", "f", "n", "big"] and len(frame) == 5
    empty = db.execute("SELECT * FROM customers WHERE 0").to_dataframe()
    assert list(empty.columns) == ["id", "name", "city", "note", "photo"] and len(empty) == 0
    failed = db.execute("DELETE FROM customers").preview()
    assert failed["ok"] is False and failed["rows"] == [] and failed["error_class"] == "UnsafeSQL"


def test_two_threads_share_one_database(shop_file):
    db = open_database(shop_file)
    errors: list[str] = []

    def work(offset: int) -> None:
        for i in range(30):
            result = db.execute(f"SELECT count(*) + {offset + i} FROM orders")
            if not result.ok or result.rows != [(3 + offset + i,)]:
                errors.append(f"{result.error} {result.rows}")
            if i % 10 == 0:
                db.execute("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
                           "SELECT count(*) FROM c", timeout=0.05)

    threads = [threading.Thread(target=work, args=(n * 1000,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert errors == []
    assert len(db.schema.tables) == 5


def test_execute_readonly_works_on_a_bare_guarded_connection(shop_file):
    conn = sqlite3.connect(f"file:{shop_file}?mode=ro", uri=True)
    install_guards(conn)
    result = execute_readonly(conn, "SELECT name FROM customers ORDER BY id", max_rows=2)
    assert isinstance(result, ExecResult)
    assert result.rows == [("Ada",), ("Bob",)] and result.truncated and result.seconds >= 0


def test_text_that_is_not_utf8_is_shown_not_fatal():
    db = Database.from_bytes("bad_text.db", db_bytes(
        "CREATE TABLE t (s TEXT); INSERT INTO t VALUES (CAST(x'ff41' AS TEXT));"))
    assert db.execute("SELECT s FROM t").rows == [("\ufffdA",)]
    assert db.schema.table("t").column("s").examples == ["\ufffdA"]
