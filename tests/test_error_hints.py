"""Hints for name errors: what the failing name could have meant, from the real schema; and
for functions SQLite does not have, how SQLite writes them."""

from __future__ import annotations

import sqlite3

import pytest

from agents.db.database import open_database
from agents.core.engine import ExecLimits, Pipeline, Step, run_to_end, start_run
from agents.rules.error_hints import explain_error, name_error_match, query_tables
from agents.pipelines.deasql.execution_check import tables_in_view
from agents.rules.name_context import name_error_context
from agents.rules.sqlite_functions import SQLITE_WAY
from dbfactory import make_db

CARS_SQL = """
CREATE TABLE car_names (MakeId INTEGER PRIMARY KEY, Model TEXT, Make TEXT);
CREATE TABLE cars_data (Id INTEGER PRIMARY KEY REFERENCES car_names(MakeId), Horsepower TEXT,
                        Weight INTEGER, Year INTEGER);
CREATE TABLE model_list (ModelId INTEGER PRIMARY KEY, Maker INTEGER, Model TEXT);
INSERT INTO car_names VALUES (1, 'amc', 'amc hornet'), (2, 'ford', 'ford pinto');
INSERT INTO cars_data VALUES (1, '90', 3000, 1970), (2, '75', 2500, 1971);
INSERT INTO model_list VALUES (1, 1, 'amc'), (2, 2, 'ford');
"""


def opened(path, script: str):
    """Yield the database built from ``script`` at ``path``, then close it."""
    with open_database(make_db(path, script)) as db:
        yield db


@pytest.fixture
def cars(tmp_path):
    yield from opened(tmp_path / "cars.sqlite", CARS_SQL)


def hint_for(db, sql: str) -> str | None:
    result = db.execute(sql)
    assert not result.ok
    return explain_error(result.error, sql, db.schema)


def test_a_qualified_column_names_the_aliased_table_and_where_the_column_really_is(cars):
    hint = hint_for(cars, "SELECT T2.Model FROM car_names AS T1 JOIN model_list AS T2 "
                          "ON T1.Model = T2.Model ORDER BY T1.Horsepower LIMIT 1")
    assert hint == ("T1 is table car_names, whose columns are: MakeId, Model, Make. "
                    "Column Horsepower is in table cars_data.")


def test_a_column_name_with_a_space_is_hinted_whole(tmp_path):
    script = ('CREATE TABLE sale (id INTEGER PRIMARY KEY, "unit price" REAL);'
              'CREATE TABLE item (id INTEGER PRIMARY KEY, "unit cost" REAL);')
    for db in opened(tmp_path / "spaces.sqlite", script):
        hint = hint_for(db, 'SELECT T1."unit cost" FROM sale AS T1')
        assert hint.startswith('T1 is table sale, whose columns are: id, unit price.')
        assert "Column unit cost is in table item." in hint


@pytest.mark.parametrize("error, names", [
    ("no such column: T1.unit price", {"qualifier": "T1", "column": "unit price"}),
    ("no such column: year\nHint: Table singer has columns: name",
     {"qualifier": None, "column": "year"}),
    ("failed: no such column: T2.Course\r\nHint: T2 is table course_arrange",
     {"qualifier": "T2", "column": "Course"}),
    ('no such column: "a b" - should this be a string literal in single-quotes?',
     {"qualifier": None, "column": '"a b"'}),
    ("no such table: main.order lines", {"table": "order lines"}),
    ("ambiguous column name: T1.name", {"qualifier": "T1", "column": "name"}),
])
def test_a_name_is_read_from_every_form_the_error_arrives_in(error, names):
    assert name_error_match(error).groupdict() == names
    assert name_error_match("no such column:\nHint: y") is None


def test_the_repair_prompts_read_a_name_with_a_space_whole(tmp_path):
    script = ('CREATE TABLE sale (id INTEGER PRIMARY KEY, "unit price" REAL);'
              'CREATE TABLE item (id INTEGER PRIMARY KEY, "unit cost" REAL);')
    for db in opened(tmp_path / "spaces.sqlite", script):
        sql = 'SELECT "unit cost" FROM sale'
        error = "no such column: unit cost"
        assert ("unit cost is a column of item, which this SQL does not use"
                in name_error_context(error, sql, db.schema))
        assert "item: id, unit cost" in tables_in_view(sql, error, db.schema)


def test_a_misspelt_column_gets_the_closest_spellings_of_its_table(cars):
    hint = hint_for(cars, "SELECT c.horse_power FROM cars_data c")
    assert "c is table cars_data, whose columns are: Id, Horsepower, Weight, Year." in hint
    assert "Closest columns of cars_data: Horsepower." in hint


def test_an_unqualified_column_lists_the_columns_of_the_query_tables(cars):
    hint = hint_for(cars, "SELECT Horsepower FROM car_names")
    assert hint == ("Table car_names has columns: MakeId, Model, Make. "
                    "Column Horsepower is in table cars_data.")


def test_a_column_no_table_has_gets_the_closest_names_in_the_database(cars):
    hint = hint_for(cars, "SELECT weights FROM car_names")
    assert "No table has a column weights; closest: cars_data.Weight." in hint


def test_an_undefined_alias_is_named_with_the_query_aliases(cars):
    hint = hint_for(cars, "SELECT T3.Model FROM car_names AS T1")
    assert hint == ("T3 is not a table or alias of this query; its tables are car_names AS T1. "
                    "Column Model is in tables car_names, model_list.")


def test_a_missing_table_gets_the_closest_tables_and_the_list(cars):
    hint = hint_for(cars, "SELECT * FROM car_name")
    assert hint.startswith("There is no table car_name. Closest tables: car_names")
    assert hint.endswith("The tables are: car_names, cars_data, model_list.")


def test_a_column_used_as_a_table_is_pointed_out(cars):
    hint = hint_for(cars, "SELECT * FROM Horsepower")
    assert "Horsepower is a column of cars_data." in hint


def test_an_ambiguous_column_names_the_tables_that_share_it(cars):
    hint = hint_for(cars, "SELECT Model FROM car_names JOIN model_list ON MakeId = ModelId")
    assert hint == ("Column Model is in several tables of the query (car_names, model_list); "
                    "prefix it with the table name or its alias.")


@pytest.mark.parametrize("error", [None, "", "near \"SELEC\": syntax error",
                                   "the query ran longer than 10 s and was stopped"])
def test_other_errors_get_no_hint(cars, error):
    assert explain_error(error, "SELECT 1", cars.schema) is None


def test_quoted_names_in_the_error_are_unquoted(cars):
    hint = explain_error('no such table: "car_name"', 'SELECT * FROM "car_name"', cars.schema)
    assert "Closest tables: car_names" in hint


def test_query_tables_maps_aliases_and_skips_ctes_and_unparsable_sql(cars):
    sql = ("WITH x AS (SELECT 1) SELECT * FROM car_names AS T1 JOIN cars_data ON 1 "
           "JOIN x ON 1")
    assert query_tables(sql, cars.schema) == {"car_names": "car_names", "T1": "car_names",
                                              "cars_data": "cars_data"}
    assert query_tables("SELECT FROM WHERE ((", cars.schema) == {}


def test_a_long_column_list_is_cut_with_a_count(tmp_path):
    columns = ", ".join(f"c{i} INTEGER" for i in range(50))
    db = open_database(make_db(tmp_path / "wide.sqlite", f"CREATE TABLE w ({columns});"))
    try:
        hint = hint_for(db, "SELECT w.missing FROM w")
    finally:
        db.close()
    assert "c39, ... (10 more)." in hint and "c40" not in hint


class OneQuery(Pipeline):
    name = "one_query"
    title = "One query"
    rules = ("error_hints", "sqlite_functions")  # the hints it gets (agents.rules.registry)

    def __init__(self, sql: str):
        self.sql = sql
        self.steps = [Step("run", "Runner", self._run)]

    def _run(self, ctx):
        result = ctx.execute(self.sql)
        ctx.set_output(parsed={"feedback": result.feedback()})


def test_the_engine_attaches_the_hint_to_failing_queries_unless_switched_off(cars):
    pipeline = OneQuery("SELECT T1.Horsepower FROM car_names T1")
    on = run_to_end(start_run(pipeline, "q", cars, llm=None))
    event = on.events[0]
    assert event.execution["hint"].startswith("T1 is table car_names")
    assert event.parsed["feedback"] == ("no such column: T1.Horsepower\nHint: "
                                        + event.execution["hint"])
    off = run_to_end(start_run(pipeline, "q", cars, llm=None,
                               limits=ExecLimits(hints=False)))
    assert off.events[0].execution["hint"] is None
    assert off.events[0].parsed["feedback"] == "no such column: T1.Horsepower"
    unlisted = OneQuery("SELECT T1.Horsepower FROM car_names T1")
    unlisted.rules = ()  # the engine calls the hints a pipeline lists, and only those
    assert run_to_end(start_run(unlisted, "q", cars, llm=None)).events[0] \
        .execution["hint"] is None


# -- aliases resolved per query scope --------------------------------------------------------------
CONCERT_SQL = """
CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, country TEXT);
CREATE TABLE concert (concert_id INTEGER PRIMARY KEY, concert_name TEXT, stadium_id INTEGER);
CREATE TABLE stadium (stadium_id INTEGER PRIMARY KEY, venue_name TEXT, name TEXT);
"""
SINGER_COLUMNS = "singer_id, name, country"
CONCERT_COLUMNS = "concert_id, concert_name, stadium_id"


@pytest.fixture
def concerts(tmp_path):
    yield from opened(tmp_path / "concerts.sqlite", CONCERT_SQL)


@pytest.mark.parametrize("sql, expected", [
    pytest.param(  # T1 is singer in the first half, concert in the half that fails
        "SELECT T1.name FROM singer AS T1 EXCEPT SELECT T1.venue_name FROM concert AS T1",
        f"Where T1.venue_name is written, T1 is table concert, whose columns are: "
        f"{CONCERT_COLUMNS}. Column venue_name is in table stadium.", id="except"),
    pytest.param(  # the failing column is written in both halves: each meaning is named
        "SELECT T1.venue_name FROM singer AS T1 UNION SELECT T1.venue_name FROM concert AS T1",
        "T1.venue_name is written in 2 parts of the query, and T1 means something else in "
        f"each. In the first: T1 is table singer, whose columns are: {SINGER_COLUMNS}. "
        "Closest columns of singer: name. In the second: T1 is table concert, whose columns "
        f"are: {CONCERT_COLUMNS}. Column venue_name is in table stadium.", id="union"),
    pytest.param(  # written in both halves, but only one half fails: that one is named
        "SELECT T1.venue_name FROM stadium AS T1 UNION SELECT T1.venue_name FROM concert AS T1",
        f"Where T1.venue_name is written, T1 is table concert, whose columns are: "
        f"{CONCERT_COLUMNS}. Column venue_name is in table stadium.", id="the-failing-half"),
    pytest.param(
        "SELECT venue_name FROM stadium UNION SELECT venue_name FROM concert",
        f"Table concert has columns: {CONCERT_COLUMNS}. Column venue_name is in table stadium.",
        id="bare-column-in-the-failing-half"),
    pytest.param(
        "SELECT T2.name FROM singer AS T1 UNION SELECT concert_name FROM concert AS T2",
        "T2 is not a table or alias where T2.name is written; the tables there are singer AS "
        "T1. (T2 is table concert in another part of the query.) Column name is in tables "
        "singer, stadium.", id="alias-of-the-other-half"),
    pytest.param(
        "SELECT name FROM singer AS T1 WHERE EXISTS (SELECT 1 FROM concert AS T2 "
        "WHERE T2.concert_id = T1.concert_id)",
        f"T1 is table singer, whose columns are: {SINGER_COLUMNS}. "
        "Column concert_id is in table concert.", id="correlated"),
    pytest.param(
        "SELECT T1.name FROM singer AS T1 WHERE T1.singer_id IN "
        "(SELECT T1.venue_name FROM concert AS T1)",
        f"Where T1.venue_name is written, T1 is table concert, whose columns are: "
        f"{CONCERT_COLUMNS}. Column venue_name is in table stadium.", id="inner-hides-outer"),
    pytest.param(
        "SELECT s.nam FROM (SELECT name FROM singer) AS s",
        "s is a subquery, whose columns are: name. Closest columns of s: name.",
        id="derived-table"),
    pytest.param(
        "WITH x AS (SELECT name FROM singer) SELECT x.country FROM x",
        "x is the WITH query x, whose columns are: name. Column country is in table singer.",
        id="cte-name"),
    pytest.param(
        "WITH x AS (SELECT T1.venue_name FROM concert AS T1) "
        "SELECT T1.name FROM x JOIN singer AS T1 ON 1",
        f"Where T1.venue_name is written, T1 is table concert, whose columns are: "
        f"{CONCERT_COLUMNS}. Column venue_name is in table stadium.", id="inside-a-cte"),
    pytest.param(  # a bare column: the tables of its own subquery, not the outer query's
        "SELECT name FROM singer WHERE country IN (SELECT venue_name FROM concert)",
        f"Table concert has columns: {CONCERT_COLUMNS}. Column venue_name is in table stadium.",
        id="bare-column-in-a-subquery"),
    pytest.param(
        "SELECT count(*) FROM concert WHERE stadium_id IN "
        "(SELECT name FROM stadium JOIN singer ON 1)",
        "Column name is in several tables of the query (singer, stadium); prefix it with the "
        "table name or its alias.", id="ambiguous-in-a-subquery"),
])
def test_aliases_are_resolved_in_the_scope_where_the_failing_name_is_written(
        concerts, sql, expected):
    assert hint_for(concerts, sql) == expected


def test_unparsable_sql_falls_back_to_the_table_level_hints(concerts):
    broken = "SELECT FROM WHERE (("
    assert explain_error("no such column: T1.venue_name", broken, concerts.schema) == \
        "Column venue_name is in table stadium."
    assert explain_error("no such column: singer.venu", broken, concerts.schema) == (
        f"Table singer, whose columns are: {SINGER_COLUMNS}. "
        "No table has a column venu; closest: stadium.venue_name.")
    assert explain_error("ambiguous column name: name", broken, concerts.schema) is None


# -- functions SQLite does not have ---------------------------------------------------------------

def test_a_function_sqlite_lacks_is_told_how_sqlite_writes_it(cars):
    hint = hint_for(cars, "SELECT COUNT(*) FROM cars_data WHERE YEAR(Year) = 1970")
    assert hint == ("SQLite has no function YEAR(); write strftime('%Y', date_column) for a "
                    "date stored as text such as '2024-03-09' (it gives text such as '2024'; "
                    "compare it with text) instead.")
    assert "a || b" in hint_for(cars, "SELECT CONCAT(Model, Make) FROM car_names")
    # an unknown function gets SQLite's own functions named, and no schema is needed for it
    assert explain_error("no such function: frobnicate", "SELECT frobnicate(1)", None) == (
        "SQLite has no function frobnicate(); use SQLite's own functions (strftime and date "
        "for dates, substr, instr, length, ifnull, iif, || to join text).")


@pytest.mark.parametrize("name", sorted(SQLITE_WAY))
def test_every_function_given_a_replacement_is_reported_missing_as_written(name):
    """Each listed call, written the simple way a model writes it, reaches SQLite's "no such
    function" (and so its hint) unless this SQLite has the function (newer ones have some)."""
    with sqlite3.connect(":memory:") as conn:
        present = {r[0].upper() for r in conn.execute("SELECT name FROM pragma_function_list")}
        if name in present:
            pytest.skip(f"this SQLite has {name}")
        with pytest.raises(sqlite3.OperationalError, match=f"no such function: {name}"):
            conn.execute(f"SELECT {name}('2024-03-09')")
