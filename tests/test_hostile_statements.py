"""A hostile-input run, part one: thousands of generated statements.

Every statement runs against a database opened from a file and from uploaded bytes. The run
asserts what must hold whatever the input: the database's bytes are unchanged, no file appears,
every statement returns within its limit plus one second, every result stays within the byte
budget, and every failure is one clear line. Part two (``test_hostile_files.py``) does the same
for generated database files, with the same checks (``hostile_checks.py``).

The generators are also used by ``bench/hostile_inputs.py``, which runs them at a larger scale.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

from agents.db.database import Database, open_database
from dbfactory import SHOP_SQL, db_bytes
from hostile_checks import LIMIT, check_result, listing

# -- statements -------------------------------------------------------------------------------

WRITES = [
    "INSERT INTO customers VALUES (9, 'Zed', NULL, NULL, NULL)",
    "INSERT INTO customers SELECT * FROM customers",
    "INSERT OR REPLACE INTO customers (id, name) VALUES (1, 'x')",
    "REPLACE INTO customers VALUES (1, 'x', NULL, NULL, NULL)",
    "UPDATE customers SET name = 'x'",
    "UPDATE OR IGNORE customers SET name = 'x'",
    "DELETE FROM customers",
    "DROP TABLE customers",
    "DROP VIEW big_spenders",
    "CREATE TABLE evil (a)",
    "CREATE TEMP TABLE scratch AS SELECT * FROM customers",
    "CREATE INDEX ix ON customers (name)",
    "CREATE VIEW v2 AS SELECT 1",
    "CREATE TRIGGER tr AFTER INSERT ON orders BEGIN DELETE FROM customers; END",
    "CREATE VIRTUAL TABLE f USING fts5(x)",
    "ALTER TABLE customers ADD COLUMN age INTEGER",
    "ALTER TABLE customers RENAME TO c2",
    "ATTACH DATABASE '{dir}/attached.db' AS other",
    "ATTACH '{dir}/attached.db' AS other",
    "DETACH DATABASE other",
    "VACUUM",
    "VACUUM INTO '{dir}/copy.db'",
    "REINDEX",
    "ANALYZE",
    "PRAGMA journal_mode=DELETE",
    "PRAGMA journal_mode=WAL",
    "PRAGMA query_only=OFF",
    "PRAGMA writable_schema=ON",
    "PRAGMA user_version=7",
    "PRAGMA wal_checkpoint(TRUNCATE)",
    "BEGIN IMMEDIATE",
    "COMMIT",
    "END",
    "ROLLBACK",
    "SAVEPOINT s1",
    "RELEASE s1",
    "UPDATE sqlite_master SET sql = 'x'",
    "WITH x AS (SELECT 1) INSERT INTO orders SELECT 99, 1, NULL FROM x",
    "WITH d AS (DELETE FROM orders RETURNING *) SELECT * FROM d",
    "SELECT load_extension('{dir}/evil')",
    "SELECT writefile('{dir}/out.txt', 'x')",
    "SELECT readfile('/etc/hostname')",
    "SELECT fts3_tokenizer('simple')",
    "SELECT edit('x')",
    "EXPLAIN DELETE FROM orders",
]
READS = [
    "SELECT count(*) FROM customers",
    "SELECT * FROM customers ORDER BY id",
    "SELECT name FROM customers UNION SELECT title FROM products",
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 50) "
    "SELECT sum(x) FROM c",
    "VALUES (1), (2)",
    "SELECT * FROM pragma_table_info('customers')",
    "SELECT * FROM big_spenders",
    "SELECT replace(name, 'a', 'b') FROM customers",
]
PREFIXES = ["", "\ufeff", "\ufeff \ufeff", " \t\n", "\x0c", "/* c */ ", "-- c\n", "/**/",
            ";", ";;\n", "SELECT 1;", "/* x */\ufeff", "\u00a0", "\u200b"]
SUFFIXES = ["", ";", " ;; ", " -- end", " /* unterminated", "\ufeff", "; SELECT 1", "\n",
            "'", " END"]

# Statements that try to exhaust time, memory or the result budget.
HEAVY = [
    "SELECT printf('%.*c', 2000000, 'a') LIKE '%' || printf('%.*c', 10000, 'a') || 'b'",
    "SELECT printf('%.*c', 2000000, 'a') GLOB '*' || printf('%.*c', 10000, 'a') || 'b'",
    "SELECT instr(printf('%.*c', 50000000, 'a'), printf('%.*c', 100000, 'a') || 'b')",
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
    "SELECT count(*) FROM customers a, customers b, customers c, customers d, customers e, "
    "customers f, customers g, customers h, customers i, customers j, customers k",
    "SELECT zeroblob(1000000000)",
    "SELECT randomblob(100000000)",
    "SELECT printf('%.*c', 2147483647, 'a')",
    "SELECT replace(printf('%.*c', 50000000, 'a'), 'a', 'bb')",
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000) "
    "SELECT group_concat(printf('%.*c', 50000, 'x')) FROM c",
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000) "
    "SELECT x, printf('%.*c', 1000000, 'x') FROM c",
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000) "
    "SELECT x, zeroblob(3000000) FROM c",
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 40000) "
    "SELECT x, zeroblob(60000) FROM c ORDER BY random()",
    "SELECT " + "(" * 2000 + "1" + ")" * 2000,
    "SELECT * FROM " + "(SELECT * FROM " * 300 + "customers" + ")" * 300,
    "SELECT " + ",".join(["1"] * 49_000),
    "SELECT " + ",".join(["1"] * 500_000),
    "SELECT '" + "x" * 50_000 + "' FROM nowhere",
    "SELECT 'a\x00b'",
    "SELECT '\ud800'",
    "SELECT * FROM pragma_journal_mode",
]


def hostile_statements(count: int | None = None, seed: int = 14) -> list[tuple[str, str]]:
    """(kind, SQL): writes and reads dressed in every prefix and suffix, in two letter cases,
    then the heavy ones; ``count`` picks a fixed sample of the dressed ones (the heavy ones are
    always in). ``kind`` is "write", "read" or "heavy"."""
    dressed = [("write" if body in WRITES else "read",
                prefix + (body if upper else body.lower()) + suffix)
               for body in WRITES + READS for prefix in PREFIXES for suffix in SUFFIXES
               for upper in (True, False)]
    if count is not None and count < len(dressed):
        dressed = random.Random(seed).sample(dressed, count)
    return dressed + [("heavy", sql) for sql in HEAVY]


# -- checks -----------------------------------------------------------------------------------

def run_statements(db: Database, statements: list[tuple[str, str]], folder: Path,
                   limit: float = LIMIT) -> dict:
    """Run every statement; counts, the slowest time and every problem found."""
    stats = {"tried": 0, "refused": 0, "ran": 0, "failed": 0, "timeouts": 0,
             "max_seconds": 0.0, "problems": []}
    for kind, template in statements:
        sql = template.replace("{dir}", str(folder))
        started = time.perf_counter()
        result = db.execute(sql, timeout=limit)
        seconds = time.perf_counter() - started
        stats["tried"] += 1
        stats["max_seconds"] = max(stats["max_seconds"], seconds)
        if result.ok:
            stats["ran"] += 1
        elif result.error_class == "UnsafeSQL":
            stats["refused"] += 1
        elif result.error_class == "Timeout":
            stats["timeouts"] += 1
        else:
            stats["failed"] += 1
        stats["problems"] += check_result(result, sql, seconds, limit, kind)
    return stats


# -- the run ----------------------------------------------------------------------------------

STATEMENTS = hostile_statements(count=2500)


def test_generated_statements_on_a_file(tmp_path):
    folder = tmp_path / "db"
    folder.mkdir()
    path = folder / "shop.sqlite"
    path.write_bytes(db_bytes(SHOP_SQL))
    before = listing(folder)
    with open_database(path) as db:
        stats = run_statements(db, STATEMENTS, folder)
        assert db.execute("SELECT count(*) FROM customers").rows == [(5,)]
    assert stats["problems"] == []
    assert stats["tried"] == len(STATEMENTS) and stats["refused"] > 1000 and stats["ran"] > 200
    assert listing(folder) == before  # the bytes are unchanged and nothing was created


def test_generated_statements_on_an_upload(tmp_path):
    data = bytearray(db_bytes(SHOP_SQL))
    original = bytes(data)
    db = Database.from_bytes("shop.sqlite", data)
    stats = run_statements(db, STATEMENTS, tmp_path)
    assert stats["problems"] == []
    assert db.execute("SELECT count(*) FROM customers").rows == [(5,)]
    assert bytes(data) == original and list(tmp_path.iterdir()) == []
    db.close()


