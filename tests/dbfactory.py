"""Small SQLite databases built on the fly for the database-layer tests."""

from __future__ import annotations

import hashlib
import random
import sqlite3
from pathlib import Path

# A shop: a composite primary key, a foreign key naming no parent column (so it means the
# parent's primary key), a composite foreign key, NULLs, long text, a blob and a view.
# A three-table concert database (with a many-to-many link) used by the pipeline tests.
SINGERS_SQL = """
CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT,
                     age INTEGER);
CREATE TABLE concert (concert_id INTEGER PRIMARY KEY, concert_name TEXT, year INTEGER);
CREATE TABLE singer_in_concert (concert_id INTEGER REFERENCES concert(concert_id),
                                singer_id INTEGER REFERENCES singer(singer_id));
INSERT INTO singer VALUES (1, 'Ann', 'France', 30), (2, 'Bo', 'Norway', 41),
                          (3, 'Cleo', 'France', 25);
INSERT INTO concert VALUES (1, 'Spring', 2014), (2, 'Autumn', 2015);
INSERT INTO singer_in_concert VALUES (1, 1), (1, 2), (2, 1);
"""

SHOP_SQL = """
CREATE TABLE customers (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  city TEXT,
  note TEXT,
  photo BLOB
);
CREATE TABLE products (
  sku TEXT NOT NULL,
  version INTEGER NOT NULL,
  title TEXT,
  price REAL,
  PRIMARY KEY (sku, version)
);
CREATE TABLE orders (
  order_id INTEGER PRIMARY KEY,
  customer INTEGER NOT NULL REFERENCES customers,
  placed_on TEXT
);
CREATE TABLE order_items (
  order_id INTEGER REFERENCES orders(order_id),
  sku TEXT,
  version INTEGER,
  quantity INTEGER,
  FOREIGN KEY (sku, version) REFERENCES products (sku, version)
);
CREATE VIEW big_spenders AS
  SELECT c.name, count(*) AS n FROM customers c JOIN orders o ON o.customer = c.id GROUP BY c.id;
INSERT INTO customers VALUES
  (1, 'Ada', NULL, 'a note that is much longer than forty characters, really it is', x'00ff'),
  (2, 'Bob', 'Paris', NULL, NULL),
  (3, 'Cy', 'Paris', 'short', NULL),
  (4, 'Di', 'Oslo', NULL, NULL),
  (5, 'Ed', 'Rome', NULL, NULL);
INSERT INTO products VALUES ('A-1', 1, 'Lamp', 9.5), ('A-1', 2, 'Lamp II', 12.0),
  ('B-7', 1, 'Desk', 120.0);
INSERT INTO orders VALUES (10, 1, '2024-01-02'), (11, 2, '2024-02-03'), (12, 2, '2024-03-04');
INSERT INTO order_items VALUES (10, 'A-1', 1, 2), (11, 'B-7', 1, 1), (12, 'A-1', 2, 3);
"""

# Names that break naive quoting: spaces, all three quote characters, reserved words, unicode.
ODD_SQL = '''
CREATE TABLE "order" (
  "select" INTEGER PRIMARY KEY,
  "group" TEXT NOT NULL,
  "it's" TEXT,
  "say ""hi""" TEXT,
  "back`tick" REAL
);
CREATE TABLE "line items" (
  "order id" INTEGER NOT NULL REFERENCES "order"("select"),
  "prix payé" REAL,
  "中文" TEXT,
  PRIMARY KEY ("order id", "中文")
);
INSERT INTO "order" VALUES (1, 'g1', 'x''y', 'q"q', 1.5), (2, 'g2', NULL, NULL, NULL);
INSERT INTO "line items" VALUES (1, 9.99, '你好'), (1, 5.0, '世界'), (2, 1.25, '你好');
'''


# Two applications side by side (the world's countries and a cars schema with its own
# continents), and a table no key links to anything.
TWO_APPLICATIONS_SQL = """
CREATE TABLE country (Code TEXT PRIMARY KEY, Name TEXT, Continent TEXT, SurfaceArea REAL);
CREATE TABLE city (ID INTEGER PRIMARY KEY, Name TEXT, CountryCode TEXT REFERENCES country(Code));
CREATE TABLE continents (ContId INTEGER PRIMARY KEY, Continent TEXT);
CREATE TABLE countries (CountryId INTEGER PRIMARY KEY, CountryName TEXT,
                        Continent INTEGER REFERENCES continents(ContId));
CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT);
INSERT INTO country VALUES ('ABW', 'Aruba', 'North America', 193),
    ('AFG', 'Afghanistan', 'Asia', 652090), ('NLD', 'Netherlands', 'Europe', 41526);
INSERT INTO city VALUES (1, 'Kabul', 'AFG'), (2, 'Amsterdam', 'NLD');
INSERT INTO continents VALUES (1, 'asia'), (2, 'europe');
INSERT INTO countries VALUES (1, 'afghanistan', 1), (2, 'netherlands', 2);
INSERT INTO notes VALUES (1, 'Asia');
"""


def make_db(path: Path, script: str) -> Path:
    """Create the SQLite file ``path`` from ``script`` and return it."""
    conn = sqlite3.connect(path)
    conn.executescript(script)
    conn.commit()
    conn.close()
    return path


def db_bytes(script: str) -> bytes:
    """The bytes of a database built from ``script`` (what an upload would carry)."""
    conn = sqlite3.connect(":memory:")
    conn.executescript(script)
    data = conn.serialize()
    conn.close()
    return data


def build_big_table(path: Path, rows: int) -> Path:
    """A file with table ``big`` of ``rows`` rows, built in a few seconds.

    A cross join of a small key table with itself writes the rows in one statement, much faster
    than a recursive CTE producing every row.
    """
    side = int(rows ** 0.5) + 1
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = OFF")
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute("PRAGMA page_size = 65536")
    conn.execute("CREATE TABLE big (id INTEGER PRIMARY KEY, label TEXT, score REAL, payload BLOB)")
    conn.execute("CREATE TEMP TABLE k (x INTEGER PRIMARY KEY)")
    conn.execute("WITH RECURSIVE n(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM n WHERE x < ?) "
                 "INSERT INTO k SELECT x FROM n", (side - 1,))
    conn.execute("INSERT INTO big (id, label, score) SELECT a.x * ? + b.x + 1, "
                 "'label ' || (b.x % 97), (b.x % 100) * 0.5 FROM k a, k b "
                 "WHERE a.x * ? + b.x < ?", (side, side, rows))
    conn.close()
    return path


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


# -- a schema larger than the model's context -------------------------------------------------

_SUBJECTS = ("account ledger invoice warehouse shipment vendor contract asset payroll budget "
             "campaign ticket device sensor route vehicle patient claim policy lesson course "
             "module audit permit parcel tariff").split()
_FACETS = "log item line history detail version archive summary link note".split()
_COLUMNS = ("code label status amount quantity created_at updated_at owner_name region "
            "category priority score comment").split()


def wide_schema_sql(tables: int, columns: int = 13, seed: int = 7) -> str:
    """``tables`` distractor tables (business words, none about music) of ``columns`` columns,
    each with a key and most with a foreign key to an earlier one, and the singers, concerts
    and their link table of :data:`SINGERS_SQL` among them, with their rows."""
    rng = random.Random(seed)
    statements = []
    names: list[str] = []
    for i in range(tables):
        name = f"{rng.choice(_SUBJECTS)}_{rng.choice(_FACETS)}_{i}"
        cols = [f"{name}_id INTEGER PRIMARY KEY"]
        cols += [f"{c} {'REAL' if c in ('amount', 'score') else 'TEXT'}"
                 for c in rng.sample(_COLUMNS, min(columns - 2, len(_COLUMNS)))]
        if names and rng.random() < 0.8:
            parent = rng.choice(names)
            cols.append(f"{parent}_ref INTEGER REFERENCES {parent}({parent}_id)")
        names.append(name)
        statements.append(f"CREATE TABLE {name} ({', '.join(cols)});")
        if i == tables // 2:
            statements.append(SINGERS_SQL)
    return "BEGIN;\n" + "\n".join(statements) + "\nCOMMIT;"


def build_wide_db(path: Path, tables: int = 1000, columns: int = 13, seed: int = 7) -> Path:
    """A database of :func:`wide_schema_sql` at ``path``."""
    return make_db(path, wide_schema_sql(tables, columns, seed))


# a charts application beside the concerts one: its singer table matches "names" and "singers"
# and its weekly table "sang", each well enough to pass the floor, but neither as well as half
# the concerts' best table
CHARTS_SQL = """
CREATE TABLE chart_singer (chart_singer_id INTEGER PRIMARY KEY, name TEXT, country TEXT);
CREATE TABLE chart_week (week_id INTEGER PRIMARY KEY, week TEXT, sang TEXT, position INTEGER,
                         movement TEXT, peak INTEGER, weeks_on INTEGER, label TEXT,
                         sales INTEGER, streams INTEGER, airplay INTEGER, debut TEXT,
                         exit TEXT, rival TEXT, note TEXT, source TEXT,
                         chart_singer_id INTEGER REFERENCES chart_singer(chart_singer_id));
"""


def build_charts_db(path: Path) -> Path:
    """300 distractor tables of :func:`wide_schema_sql`, the singers and concerts among them,
    and :data:`CHARTS_SQL` beside them, at ``path``."""
    return make_db(path, wide_schema_sql(300).replace("COMMIT;", CHARTS_SQL + "COMMIT;"))


TWO_SINGERS_SQL = ("CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, country TEXT); "
                   "INSERT INTO singer VALUES (1, 'Ana', 'France'), (2, 'Bo', 'Chile');")


def two_singers_db(tmp_path: Path):
    """A two-row ``singer`` database, opened read-only (close it, or use it in ``with``)."""
    from agents.db.database import open_database

    return open_database(make_db(tmp_path / "concerts.sqlite", TWO_SINGERS_SQL))
