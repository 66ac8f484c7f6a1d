"""Introspection (keys, counts, bounded examples), selections and the three renderings."""

from __future__ import annotations

import json
import sqlite3
import time

import pytest

from agents.db.database import Database, open_database
from agents.db.safe_sql import install_guards
from agents.db.introspection import introspect
from agents.db.identifiers import quote_identifier
from agents.db.schema import ForeignKey, Schema
from dbfactory import ODD_SQL, SHOP_SQL, build_big_table, db_bytes


@pytest.fixture(scope="module")
def shop() -> Schema:
    return Database.from_bytes("shop.sqlite", db_bytes(SHOP_SQL)).schema


@pytest.fixture(scope="module")
def odd_db() -> Database:
    return Database.from_bytes("odd.sqlite", db_bytes(ODD_SQL))


def _shape(schema: Schema) -> dict:
    """What DDL can express: names, types, NOT NULL, primary and foreign keys."""
    return {
        "tables": [(t.name, t.primary_key, [(c.name, c.type, c.not_null, c.primary_key)
                                             for c in t.columns]) for t in schema.tables],
        "foreign_keys": [tuple(vars(fk).values()) for fk in schema.foreign_keys],
    }


def _recreate(ddl: str) -> Schema:
    conn = sqlite3.connect(":memory:")
    conn.executescript(ddl)
    install_guards(conn)
    return introspect(conn, "copy")


def test_columns_keys_and_counts(shop):
    assert shop.db_name == "shop"
    customers = shop.table("CUSTOMERS")
    assert customers.primary_key == ["id"] and customers.row_count == 5
    assert not customers.row_count_estimated and customers.row_count_label == "5"
    name = customers.column("Name")
    assert (name.type, name.not_null, name.primary_key) == ("TEXT", True, False)
    products = shop.table("products")
    assert products.primary_key == ["sku", "version"]
    assert [c.primary_key for c in products.columns] == [True, True, False, False]
    assert shop.table("order_items").primary_key == []
    view = shop.table("big_spenders")
    assert view.is_view and view.row_count == 2 and view.column_names() == ["name", "n"]
    assert shop.column_names("orders") == ["order_id", "customer", "placed_on"]
    assert shop.column_names("nope") == [] and shop.table("nope") is None


def test_foreign_keys_resolve_the_parent_primary_key(shop):
    assert shop.foreign_keys == [
        ForeignKey("orders", "customer", "customers", "id"),  # declared without a column
        ForeignKey("order_items", "order_id", "orders", "order_id"),
        ForeignKey("order_items", "sku", "products", "sku"),
        ForeignKey("order_items", "version", "products", "version"),
    ]


def test_examples_are_distinct_non_null_short_and_blob_safe(shop):
    customers = shop.table("customers")
    assert customers.column("id").examples == [1, 2, 3]
    assert customers.column("city").examples == ["Paris", "Oslo", "Rome"]
    assert customers.column("note").examples == [
        "a note that is much longer than forty ch…", "short"]
    assert customers.column("photo").examples == ["<blob>"]
    assert shop.table("products").column("price").examples == [9.5, 12.0, 120.0]


def test_render_macsql_follows_the_paper_format(shop):
    text = shop.render_macsql({"orders": "keep_all", "customers": ["city"]})
    assert text == (
        "# Table: customers\n"
        "[\n"
        "  (id, id. Primary Key. Value examples: [1, 2, 3].),\n"
        "  (city, city. Value examples: ['Paris', 'Oslo', 'Rome'].)\n"
        "]\n"
        "# Table: orders\n"
        "[\n"
        "  (order_id, order id. Primary Key. Value examples: [10, 11, 12].),\n"
        "  (customer, customer. Value examples: [1, 2].),\n"
        "  (placed_on, placed on. Value examples: ['2024-01-02', '2024-02-03', '2024-03-04'].)\n"
        "]")
    described = Schema.from_dict(shop.to_dict())
    described.table("orders").column("placed_on").description = "the day the order was placed"
    assert ("(placed_on, the day the order was placed. Value examples:"
            in described.render_macsql({"orders": "keep_all"}))


def test_render_foreign_keys_only_between_chosen_tables(shop):
    assert shop.render_foreign_keys() == (
        "orders.`customer` = customers.`id`\n"
        "order_items.`order_id` = orders.`order_id`\n"
        "order_items.`sku` = products.`sku`\n"
        "order_items.`version` = products.`version`")
    assert shop.render_foreign_keys({"orders": "keep_all", "order_items": "keep_all"}) == (
        "order_items.`order_id` = orders.`order_id`")
    assert shop.render_foreign_keys({"orders": "keep_all"}) == ""


def test_subset_drops_unknown_names_and_keeps_join_columns(shop):
    part = shop.subset({
        "ORDER_ITEMS": ["Quantity", "no_such_column"],
        "Orders": "keep_all",
        "customers": "drop_all",
        "no_such_table": "keep_all",
        "products": {"nonsense": 1},
    })
    assert part.table_names() == ["orders", "order_items"]
    # quantity was asked for; the foreign-key columns come along so joins stay possible
    assert part.column_names("order_items") == ["order_id", "sku", "version", "quantity"]
    assert part.foreign_keys == [ForeignKey("order_items", "order_id", "orders", "order_id")]
    only_keys = shop.subset({"products": ["title"]})
    assert only_keys.column_names("products") == ["sku", "version", "title"]
    assert shop.subset({}).tables == [] and shop.subset({}).render_macsql() == ""
    assert shop.subset(None).to_dict() == shop.to_dict()
    assert shop.subset({"customers": "Keep_All "}).column_names("customers") == [
        "id", "name", "city", "note", "photo"]
    assert shop.column_names("customers") == ["id", "name", "city", "note", "photo"]


def test_ddl_recreates_the_same_schema(shop):
    tables_only = {t.name: "keep_all" for t in shop.tables if not t.is_view}
    ddl = shop.render_ddl(tables_only)
    assert "PRIMARY KEY (sku, version)" in ddl
    assert "FOREIGN KEY (customer) REFERENCES customers (id)" in ddl
    assert _shape(_recreate(ddl)) == _shape(shop.subset(tables_only))


def test_odd_names_round_trip_through_every_rendering(odd_db):
    schema = odd_db.schema
    assert schema.table_names() == ["order", "line items"]
    assert schema.column_names("order") == ["select", "group", "it's", 'say "hi"', "back`tick"]
    assert schema.table("line items").primary_key == ["order id", "中文"]
    assert schema.foreign_keys == [ForeignKey("line items", "order id", "order", "select")]
    assert schema.table("order").column("it's").examples == ["x'y"]

    ddl = schema.render_ddl()
    assert 'CREATE TABLE "order" (' in ddl and '"say ""hi""" TEXT' in ddl
    assert _shape(_recreate(ddl)) == _shape(schema)

    text = schema.render_macsql()
    assert "# Table: `order`" in text and "# Table: `line items`" in text
    assert "  (`back``tick`, back`tick. Value examples: [1.5].)" in text
    assert "(`it's`, it's. Value examples: ['x''y'].)" in text
    assert "(`中文`, 中文. Primary Key. Value examples: ['你好', '世界'].)" in text
    assert schema.render_foreign_keys() == "`line items`.`order id` = `order`.`select`"

    restored = Schema.from_dict(json.loads(json.dumps(schema.to_dict())))
    assert restored == schema
    assert restored.subset({"LINE ITEMS": ["prix payé"]}).column_names("line items") == [
        "order id", "prix payé", "中文"]

    for table in schema.tables:
        columns = ", ".join(quote_identifier(c) for c in table.column_names())
        result = odd_db.execute(f"SELECT {columns} FROM {quote_identifier(table.name)}")
        assert result.ok and result.row_count == table.row_count
    assert odd_db.table_preview("line items").rows[0] == (1, 9.99, "你好")
    joined = odd_db.execute('SELECT o."group", sum(l."prix payé") FROM "order" AS o '
                            'JOIN "line items" AS l ON l."order id" = o."select" '
                            'GROUP BY o."select" ORDER BY 1')
    assert joined.rows == [("g1", pytest.approx(14.99)), ("g2", 1.25)]


def test_counts_fall_back_to_an_estimate_when_time_runs_out():
    conn = sqlite3.connect(":memory:")
    conn.executescript(SHOP_SQL + """
        CREATE TABLE keyed (k TEXT PRIMARY KEY, v) WITHOUT ROWID;
        INSERT INTO keyed VALUES ('a', 1);
        CREATE TABLE nothing_yet (id INTEGER PRIMARY KEY, label TEXT);
        CREATE TABLE own_rowid (rowid TEXT, label TEXT);
        INSERT INTO own_rowid VALUES (NULL, 'a'), ('x', 'b');
        CREATE TABLE keyed_empty (k TEXT PRIMARY KEY) WITHOUT ROWID;
        DELETE FROM orders WHERE order_id = 11;""")
    install_guards(conn)
    schema = introspect(conn, "shop", budget_seconds=0)
    orders = schema.table("orders")
    assert orders.row_count_estimated and orders.row_count == 12  # max(rowid), not the count 2
    assert orders.row_count_label == "≈12"
    for name in ("nothing_yet", "keyed_empty"):  # no row at all: known, not estimated
        empty = schema.table(name)
        assert empty.row_count == 0 and not empty.row_count_estimated
    own = schema.table("own_rowid")  # its own "rowid" column hides the real one: not empty
    assert own.row_count == -1 and own.row_count_estimated
    keyed = schema.table("keyed")
    assert keyed.row_count == -1 and keyed.row_count_label == "unknown"
    assert schema.table("big_spenders").row_count == -1
    assert all(c.examples == [] for t in schema.tables for c in t.columns)


@pytest.fixture(scope="module")
def big_file(tmp_path_factory):
    """Ten million rows (about 5 s to build on two cores)."""
    path = tmp_path_factory.mktemp("big") / "big.sqlite"
    return build_big_table(path, 10_000_000)


def test_introspection_of_ten_million_rows_is_bounded(big_file):
    started = time.perf_counter()
    db = open_database(big_file)
    schema = db.schema
    elapsed = time.perf_counter() - started
    assert elapsed < 12, f"opening and introspecting took {elapsed:.1f} s"
    big = schema.table("big")
    assert big.row_count == 10_000_000  # exact, or max(rowid) when counting ran out of time
    assert big.column("id").examples == [1, 2, 3]
    assert big.column("label").examples == ["label 0", "label 1", "label 2"]
    assert big.column("score").examples == [0.0, 0.5, 1.0]
    assert big.column("payload").examples == []  # all NULL
    stopped = db.execute("SELECT count(*) FROM big a JOIN big b ON a.label = b.label", timeout=0.5)
    assert stopped.error_class == "Timeout"


def test_full_text_index_tables_are_hidden_but_the_index_is_listed():
    data = db_bytes("CREATE VIRTUAL TABLE docs USING fts5(title, body);"
                    "INSERT INTO docs VALUES ('Intro', 'hello world');"
                    "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT);")
    db = Database.from_bytes("fts.db", data)
    assert db.schema.table_names() == ["docs", "notes"]
    assert db.schema.table("docs").column("title").examples == ["Intro"]
    assert db.execute("SELECT title FROM docs WHERE docs MATCH 'hello'").rows == [("Intro",)]
