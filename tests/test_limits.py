"""Hard limits: a deadline that stops one long step, a byte budget, memory, and the gate's edges.

Where time is the behaviour under test (a deadline, a database that stays usable while a query
is stopped) the bounds are the limit plus generous slack, never a speed target.
"""

from __future__ import annotations

import json
import threading
import time

import pytest

from agents.db import introspection
from agents.db.database import Database, DatabaseError, open_database
from agents.db.exec_result import CUT_MARK, MAX_CELL_BYTES, MAX_RESULT_BYTES
from agents.db.safe_sql import MAX_SQL_CHARS, UnsafeSQLError, check_sql
from dbfactory import SHOP_SQL, db_bytes, make_db, sha256

# One LIKE over 2 MB against a 10 kB pattern: a single SQLite step of minutes, which neither
# the progress handler nor sqlite3_interrupt() can stop.
SLOW_LIKE = "SELECT printf('%.*c', 2000000, 'a') LIKE '%' || printf('%.*c', 10000, 'a') || 'b'"
SLACK = 1.0  # seconds allowed past a limit


@pytest.fixture
def shop_file(tmp_path):
    return make_db(tmp_path / "shop.sqlite", SHOP_SQL)


@pytest.fixture
def shop(shop_file):
    with open_database(shop_file) as db:
        yield db


def _timed(db, sql, **limits):
    started = time.perf_counter()
    result = db.execute(sql, **limits)
    return result, time.perf_counter() - started


def test_a_single_long_step_is_stopped_at_the_time_limit(shop, shop_file):
    before = sha256(shop_file)
    result, elapsed = _timed(shop, SLOW_LIKE, timeout=1.0)
    assert not result.ok and result.error_class == "Timeout"
    assert result.error == "the query ran longer than 1 s and was stopped"
    assert elapsed < 1.0 + SLACK
    for pattern in ("GLOB '*' || printf('%.*c', 10000, 'a') || 'b'",
                    "LIKE '%' || printf('%.*c', 10000, 'a') || 'b'"):
        sql = f"SELECT printf('%.*c', 2000000, 'a') {pattern}"
        result, elapsed = _timed(shop, sql, timeout=0.5)
        assert result.error_class == "Timeout" and elapsed < 0.5 + SLACK, sql
    again, elapsed = _timed(shop, "SELECT count(*) FROM customers")
    assert again.rows == [(5,)] and elapsed < SLACK
    assert sha256(shop_file) == before


def test_other_sessions_query_while_one_query_is_being_stopped(shop):
    slow: dict = {}
    thread = threading.Thread(target=lambda: slow.update(result=shop.execute(SLOW_LIKE,
                                                                             timeout=4.0)))
    thread.start()
    time.sleep(0.3)  # the slow query holds one worker now
    for _ in range(3):
        result, elapsed = _timed(shop, "SELECT count(*) FROM orders")
        assert result.rows == [(3,)] and elapsed < SLACK
    thread.join(timeout=4.0 + 5 * SLACK)
    assert slow["result"].error_class == "Timeout"


def test_the_gate_parses_inside_the_deadline_and_refuses_overlong_text(shop):
    wide = "SELECT " + ",".join(["1"] * ((MAX_SQL_CHARS - 10) // 2))
    assert len(wide) <= MAX_SQL_CHARS
    result, elapsed = _timed(shop, wide, timeout=0.1)
    assert result.error_class == "Timeout" and elapsed < 0.1 + SLACK
    overlong = "SELECT " + ",".join(["1"] * 500_000)
    result, elapsed = _timed(shop, overlong)
    assert result.error_class == "UnsafeSQL" and elapsed < SLACK
    assert result.error == (f"the query is too long ({len(overlong):,} characters; the limit is "
                            f"{MAX_SQL_CHARS:,}): send a shorter query")


@pytest.mark.parametrize("depth", [46, 60, 200, 1200])
def test_deep_nesting_is_a_result_not_a_recursion_error(shop, depth):
    parens = shop.execute("SELECT " + "(" * depth + "1" + ")" * depth)
    subqueries = shop.execute("SELECT * FROM " + "(SELECT * FROM " * depth + "customers"
                              + ")" * depth)
    for result in (parens, subqueries):
        assert result.ok or (result.error and "\n" not in result.error), result.error
    if depth <= 60:
        assert parens.rows == [(1,)]


def test_the_gate_sees_through_a_byte_order_mark_and_unclosed_comments():
    for text in ("\ufeffDELETE FROM customers", "\ufeff \ufeffDROP TABLE customers",
                 "/* x */\ufeffUPDATE customers SET name = 'x'"):
        with pytest.raises(UnsafeSQLError, match="statements are not allowed"):
            check_sql(text)
    with pytest.raises(UnsafeSQLError, match=r"transaction control \(END\)"):
        check_sql("END /* unterminated")
    with pytest.raises(UnsafeSQLError, match=r"transaction control \(COMMIT\)"):
        check_sql("-- a\n/* b */ COMMIT /* open")
    with pytest.raises(UnsafeSQLError, match="only comments"):
        check_sql("/* never closed")
    assert check_sql("\ufeffSELECT 1") == "SELECT 1"


def test_a_refusal_by_the_authorizer_says_what_happened(shop):
    result = shop.execute("SELECT * FROM pragma_journal_mode")
    assert result.error_class == "UnsafeSQL"
    assert result.error.startswith("refused by the read-only guard: a query may only read")


def test_sqlglot_never_prints_user_sql(capfd):
    check_sql("SELECT a -> '$.b..[' FROM secret_table_name")
    captured = capfd.readouterr()
    assert "secret_table_name" not in captured.err and "$.b" not in captured.err


def test_the_byte_budget_bounds_rows_cells_and_previews(shop):
    huge = shop.execute("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
                        "WHERE x < 1000) SELECT x, printf('%.*c', 1000000, 'x') FROM c")
    assert huge.ok and huge.truncated and huge.truncated_reason == "bytes"
    assert huge.byte_count <= MAX_RESULT_BYTES and 0 < huge.row_count < 1000
    assert huge.cells_cut == huge.row_count
    assert huge.rows[0][1] == "x" * MAX_CELL_BYTES + CUT_MARK
    preview = huge.preview(rows=1000)
    assert preview["truncated_reason"] == "bytes" and preview["cells_cut"] == huge.row_count
    assert len(json.dumps(preview)) < MAX_RESULT_BYTES * 1.1
    assert "size budget" in huge.limit_note() and "cut to 64 KiB" in huge.limit_note()

    small = shop.execute("SELECT name, note FROM customers ORDER BY id", max_bytes=20,
                         max_cell_bytes=10)
    assert small.rows[0] == ("Ada", "a note tha" + CUT_MARK)
    assert small.truncated_reason == "bytes" and small.byte_count <= 20
    blobs = shop.execute("SELECT zeroblob(1000000) FROM customers")
    assert blobs.rows[0][0] == bytes(MAX_CELL_BYTES)
    assert blobs.preview()["rows"][0] == [f"<blob {MAX_CELL_BYTES} bytes>"]
    rows_capped = shop.execute("SELECT id FROM customers", max_rows=2)
    assert rows_capped.truncated_reason == "rows" and rows_capped.row_count == 2


def test_values_and_memory_have_hard_limits(shop):
    too_big = shop.execute("SELECT zeroblob(1000000000)")
    assert too_big.error_class == "SizeLimit"
    assert too_big.error == ("a value the query builds is longer than the limit for one string "
                             "or blob (64 MiB)")
    hungry = shop.execute("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
                          "WHERE x < 40000) SELECT x, zeroblob(60000) FROM c ORDER BY random()",
                          timeout=60)
    assert hungry.error_class == "MemoryLimit"
    assert hungry.error == "the query needed more memory than a query may use and was stopped"
    assert shop.execute("SELECT count(*) FROM orders").rows == [(3,)]


SLOW_VIEW = f"CREATE VIEW slow AS {SLOW_LIKE} AS x;"


def test_an_upload_with_a_slow_view_opens_within_its_budget(monkeypatch):
    monkeypatch.setattr(introspection, "INTROSPECTION_BUDGET", 2.0)
    monkeypatch.setattr(introspection, "QUERY_BUDGET", 0.5)
    data = db_bytes(SHOP_SQL + SLOW_VIEW)
    started = time.perf_counter()
    db = Database.from_bytes("slow.db", data)
    schema = db.schema
    assert time.perf_counter() - started < 2.0 + SLACK
    slow = schema.table("slow")
    assert slow.is_view and slow.row_count == -1 and slow.column("x").examples == []
    assert schema.table("customers").row_count == 5  # tables before the view were read
    assert db.execute("SELECT count(*) FROM orders").rows == [(3,)]


def test_a_database_of_broken_views_only_is_refused_clearly(tmp_path):
    data = db_bytes("CREATE TABLE gone (a); CREATE VIEW v AS SELECT a FROM gone; "
                    "DROP TABLE gone;")
    with pytest.raises(DatabaseError) as info:
        Database.from_bytes("views.db", data)
    assert str(info.value) == ("views.db: none of its 1 tables and views can be read "
                               "(for example 'v': no such table: main.gone)")
