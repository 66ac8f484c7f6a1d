"""A query that fails on a column name, rewritten to take the column from the table that has it:
only where that is one clear change, and only offered when SQLite runs the result."""

from __future__ import annotations

import pytest

from agents.db.database import open_database
from agents.core.engine import Pipeline, Step, run_to_end, start_run
from agents.rules.name_rewrite import execute_with_hint
from agents.rules.name_rewrite import (Rewrite, hint_with_rewrite, rewrite_name_error,
    rewrite_or_none, runnable_rewrite, take_rewrite)
from dbfactory import make_db

BOOKS_SQL = """
CREATE TABLE author (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE publisher (id INTEGER PRIMARY KEY, name TEXT, country TEXT);
CREATE TABLE book (id INTEGER PRIMARY KEY, title TEXT, PublishedYear INTEGER,
                   author_id INTEGER REFERENCES author(id),
                   publisher_id INTEGER REFERENCES publisher(id));
INSERT INTO author VALUES (1, 'Ada'), (2, 'Ben');
INSERT INTO publisher VALUES (1, 'Quill', 'France'), (2, 'Inkwell', 'Norway');
INSERT INTO book VALUES (1, 'Dawn', 2001, 1, 1), (2, 'Dusk', 2005, 1, 2), (3, 'Noon', 2010, 2, 2);
"""


@pytest.fixture
def books(tmp_path):
    with open_database(make_db(tmp_path / "books.sqlite", BOOKS_SQL)) as db:
        yield db


def rewrite(db, sql: str):
    result = db.execute(sql)
    assert not result.ok
    return runnable_rewrite(db, result.error, sql, db.schema)


def rows(db, sql: str) -> list:
    result = db.execute(sql)
    assert result.ok, result.error
    return sorted(result.rows)


def test_a_column_of_another_table_of_the_query_takes_that_tables_alias(books):
    found = rewrite(books, "SELECT T1.title FROM author AS T1 JOIN book AS T2 "
                           "ON T1.id = T2.author_id WHERE T1.name = 'Ada'")
    assert found.sql == ("SELECT T2.title FROM author AS T1 JOIN book AS T2 "
                         "ON T1.id = T2.author_id WHERE T1.name = 'Ada'")
    assert found.changes == ("T1.title written T2.title (book, which the query names T2, has "
                             "the column)",)
    assert rows(books, found.sql) == [("Dawn",), ("Dusk",)]


def test_a_column_of_a_table_the_query_lacks_is_joined_along_its_foreign_key(books):
    found = rewrite(books, "SELECT T1.title, T1.country FROM book AS T1 WHERE T1.id = 3")
    assert found.sql == ("SELECT T1.title, T2.country FROM book AS T1 JOIN publisher AS T2 "
                         "ON T1.publisher_id = T2.id WHERE T1.id = 3")
    assert "publisher joined as T2 on T1.publisher_id = T2.id" in found.changes[0]
    assert rows(books, found.sql) == [("Noon", "Norway")]


def test_a_table_named_but_never_joined_is_joined(books):
    found = rewrite(books, "SELECT book.title FROM book WHERE publisher.country = 'Norway'")
    assert found.sql == ("SELECT book.title FROM book JOIN publisher ON book.publisher_id = "
                         "publisher.id WHERE publisher.country = 'Norway'")
    assert found.changes == ("publisher joined on book.publisher_id = publisher.id (the query "
                             "writes publisher.country without joining it)",)


def test_a_bare_column_is_joined_and_qualified_with_the_table_name(books):
    found = rewrite(books, "SELECT title FROM book WHERE country = 'France'")
    assert found.sql == ("SELECT title FROM book JOIN publisher ON book.publisher_id = "
                         "publisher.id WHERE publisher.country = 'France'")
    assert rows(books, found.sql) == [("Dawn",)]


def test_a_join_condition_on_a_missing_column_is_put_on_the_key_between_the_two_tables(books):
    found = rewrite(books, "SELECT T1.name, T2.title FROM author AS T1 JOIN book AS T2 "
                           "ON T1.author_id = T2.author_id")
    assert found.sql == ("SELECT T1.name, T2.title FROM author AS T1 JOIN book AS T2 "
                         "ON T1.id = T2.author_id")
    assert found.changes == ("the join on T1.author_id = T2.author_id written on "
                             "T1.id = T2.author_id (the key between author and book)",)


def test_a_column_spelt_otherwise_takes_the_tables_spelling(books):
    found = rewrite(books, "SELECT title FROM book WHERE published_year > 2004")
    assert found.sql == "SELECT title FROM book WHERE PublishedYear > 2004"
    assert "the column of book is spelt so" in found.changes[0]


def test_several_wrong_columns_are_rewritten_in_turn(books):
    found = rewrite(books, "SELECT T1.title, T1.country FROM author AS T1 JOIN book AS T2 "
                           "ON T1.id = T2.author_id")
    assert len(found.changes) == 2
    assert rows(books, found.sql) == [("Dawn", "France"), ("Dusk", "Norway"),
                                      ("Noon", "Norway")]


def test_no_rewrite_where_two_tables_could_be_meant(books):
    # both author and publisher have a name and a key from book: which one is a guess
    assert rewrite(books, "SELECT T1.name FROM book AS T1") is None
    sql = "SELECT T1.nosuch FROM book AS T1"
    assert rewrite_name_error("no such column: T1.nosuch", sql, books.schema) is None


def test_no_rewrite_compares_a_column_with_itself(books):
    # author has no country and no key to publisher: T2.country = T2.country would run, true
    # of every pair of rows
    sql = ("SELECT T1.name FROM author AS T1 JOIN publisher AS T2 ON T1.country = T2.country "
           "WHERE T2.name = 'Quill'")
    assert rewrite_name_error("no such column: T1.country", sql, books.schema) is None
    for condition in ("T1.country >= T2.country", "T1.country IS T2.country",
                      "(T1.country) LIKE T2.country", "T1.country = \"T2\".\"COUNTRY\"",
                      "lower(T1.country) = lower(T2.country)",
                      "T1.country COLLATE NOCASE = T2.country", "T1.country IN (T2.country)",
                      "T1.country BETWEEN T2.country AND 'Z'"):
        sql = f"SELECT T1.name FROM author AS T1, publisher AS T2 WHERE {condition}"
        assert rewrite_name_error("no such column: T1.country", sql, books.schema) is None, sql
    sql = "SELECT T1.name FROM author AS T1, publisher AS T2 WHERE T1.country = 'France'"
    assert rewrite_name_error("no such column: T1.country", sql, books.schema) is not None


def test_no_rewrite_is_offered_when_the_rewritten_query_still_fails(books):
    sql = ("SELECT T1.title FROM author AS T1 JOIN book AS T2 ON T1.id = T2.author_id "
           "WHERE nosuch_function(T1.id)")
    assert rewrite_name_error("no such column: T1.title", sql, books.schema) is not None
    assert runnable_rewrite(books, "no such column: T1.title", sql, books.schema) is None


def test_an_alias_reused_in_two_halves_is_rewritten_only_where_it_fails(books):
    found = rewrite(books, "SELECT T1.name FROM author AS T1 EXCEPT SELECT T1.name "
                           "FROM book AS T2 JOIN author AS T1 ON T1.id = T2.author_id "
                           "WHERE T1.country = 'France'")
    assert found is not None
    assert "T3.country" in found.sql and found.sql.startswith("SELECT T1.name FROM author AS T1")
    assert rows(books, found.sql) == [("Ben",)]


def test_sql_that_does_not_parse_or_another_error_gets_no_rewrite(books):
    assert rewrite_name_error("no such column: T1.x", "SELECT T1.x FROM (((", books.schema) \
        is None
    assert rewrite_name_error("no such table: bok", "SELECT * FROM bok", books.schema) is None
    assert hint_with_rewrite(books, "near \"FORM\": syntax error", "SELECT 1 FORM book",
                             books.schema) is None


def test_the_hint_ends_with_the_version_that_runs_for_agents_and_for_a_persons_sql(books):
    sql = "SELECT T1.title FROM author AS T1 JOIN book AS T2 ON T1.id = T2.author_id"

    class OneQuery(Pipeline):
        name = "one_query"
        title = "One query"
        rules = ("error_hints",)
        steps = [Step("run", "Runner", lambda ctx: ctx.set_output(
            parsed={"feedback": ctx.execute(sql).feedback()}))]

    feedback = run_to_end(start_run(OneQuery(), "q", books, llm=None)).events[0] \
        .parsed["feedback"]
    assert feedback.startswith("no such column: T1.title\nHint: T1 is table author")
    assert feedback.endswith("A version that runs, with T1.title written T2.title (book, which "
                             "the query names T2, has the column): SELECT T2.title FROM author "
                             "AS T1 JOIN book AS T2 ON T1.id = T2.author_id")
    person = execute_with_hint(books, sql, timeout=5, max_rows=10)
    assert person.hint == feedback.split("\nHint: ", 1)[1]


def test_a_subquery_in_from_that_selects_the_column_takes_it_and_nothing_is_joined(books):
    found = rewrite(books, "SELECT T1.title FROM author AS T1 JOIN (SELECT author_id, title "
                           "FROM book) AS T2 ON T1.id = T2.author_id WHERE T1.name = 'Ben'")
    assert found.sql == ("SELECT T2.title FROM author AS T1 JOIN (SELECT author_id, title FROM "
                         "book) AS T2 ON T1.id = T2.author_id WHERE T1.name = 'Ben'")
    assert "the subquery T2" in found.changes[0]


def test_a_join_never_hides_an_outer_alias_or_changes_a_bare_name(books):
    # the subquery's new table must not be called T2: the subquery uses T2 for the outer author
    found = rewrite(books, "SELECT T2.name FROM author AS T2 WHERE EXISTS (SELECT 1 FROM "
                           "book AS T1 WHERE T1.author_id = T2.id AND T1.country = 'France')")
    assert "JOIN publisher AS T3 ON T1.publisher_id = T3.id" in found.sql
    assert rows(books, found.sql) == [("Ada",)]
    # joining publisher would make the bare name (the outer author's) mean publisher.name
    assert rewrite(books, "SELECT name FROM author WHERE EXISTS (SELECT 1 FROM book WHERE "
                          "book.author_id = author.id AND book.country = 'France' "
                          "AND name = 'Ada')") is None


@pytest.mark.parametrize("sql, join, expected", [
    # a self-join: the wrong alias (T2) keeps its own key, not T1's
    ("SELECT T1.title FROM book AS T1 JOIN book AS T2 ON T1.author_id = T2.author_id "
     "WHERE T2.country = 'Norway' AND T1.id <> T2.id", "ON T2.publisher_id = T3.id", [("Dawn",)]),
    # a join condition with no key between its two tables: the column's alias moves instead
    ("SELECT T3.country FROM author AS T1 JOIN book AS T2 ON T1.id = T2.author_id "
     "JOIN publisher AS T3 ON T1.publisher_id = T3.id WHERE T1.name = 'Ben'",
     "ON T2.publisher_id = T3.id", [("Norway",)]),
], ids=["self-join", "join-condition-without-key"])
def test_the_key_of_the_alias_that_was_written_is_the_one_used(books, sql, join, expected):
    found = rewrite(books, sql)
    assert join in found.sql
    assert rows(books, found.sql) == expected


@pytest.mark.parametrize("script, sql, moved, expected", [
    # names that are keywords or not plain words stay quoted
    ('CREATE TABLE "order" (id INTEGER PRIMARY KEY, "group" TEXT);'
     'CREATE TABLE line (id INTEGER PRIMARY KEY, "order" INTEGER REFERENCES "order"(id),'
     ' "limit" REAL);'
     'INSERT INTO "order" VALUES (1, \'a\'); INSERT INTO line VALUES (1, 1, 2.5);',
     'SELECT T1."group", T1."limit" FROM "order" AS T1 JOIN line AS T2 ON T1.id = T2."order"',
     'T2."limit"', [("a", 2.5)]),
    # a name with a space is read whole from SQLite's message
    ('CREATE TABLE item (id INTEGER PRIMARY KEY, "unit name" TEXT);'
     'CREATE TABLE sale (id INTEGER PRIMARY KEY, item_id INTEGER REFERENCES item(id),'
     ' "unit price" REAL);'
     "INSERT INTO item VALUES (1, 'pen'); INSERT INTO sale VALUES (1, 1, 2.5);",
     'SELECT T1."unit name", T1."unit price" FROM item AS T1 JOIN sale AS T2 '
     'ON T1.id = T2.item_id', 'T2."unit price"', [("pen", 2.5)]),
])
def test_names_that_are_keywords_or_hold_spaces_stay_whole_and_quoted(tmp_path, script, sql,
                                                                      moved, expected):
    with open_database(make_db(tmp_path / "names.sqlite", script)) as db:
        found = rewrite(db, sql)
        assert moved in found.sql
        assert rows(db, found.sql) == expected


def test_a_failing_check_or_a_broken_schema_leaves_the_error_and_its_hint(books):
    sql = "SELECT T1.title FROM author AS T1 JOIN book AS T2 ON T1.id = T2.author_id"
    error = "no such column: T1.title"

    class Failing:
        def execute(self, *args, **kwargs):
            raise RuntimeError("the worker went away")

    hint = hint_with_rewrite(Failing(), error, sql, books.schema)
    assert hint.startswith("T1 is table author") and "A version that runs" not in hint
    assert hint_with_rewrite(books, error, sql, object()) is None

    seen = []

    class Recording:
        def execute(self, sql, *, timeout, max_rows):
            seen.append((timeout, max_rows))
            return books.execute(sql, timeout=timeout, max_rows=max_rows)

    assert "A version that runs" in hint_with_rewrite(Recording(), error, sql, books.schema,
                                                      timeout=30)
    assert len(seen) == 1 and seen[0][0] <= 2.0 and seen[0][1] == 1


def test_take_rewrite_runs_the_rewrite_or_keeps_the_sql_as_written(books):
    """What the pipelines' endings and CSMA's agents take: the rewrite run with the caller's
    runner, or, when there is none or it fails under the caller's limits, the SQL as written
    (run again, so a recording runner records what goes on)."""
    written = "SELECT T1.title FROM author AS T1 JOIN book AS T2 ON T2.author_id = T1.id"
    failed = books.execute(written)
    ran: list[str] = []

    def run(sql):
        ran.append(sql)
        return books.execute(sql)

    assert take_rewrite(None, failed, run) == (written, failed, None) and ran == []
    sql, result, what = take_rewrite(rewrite_or_none(books, failed.error, written, books.schema),
                                     failed, run)
    assert result.ok and sql == ran[-1] and "T2.title" in sql
    assert what == {"written_sql": written, "written_error": "no such column: T1.title",
                    "rewrite": "T1.title written T2.title (book, which the query names T2, "
                               "has the column)"}
    ran.clear()
    broken = Rewrite(sql="SELECT still_missing FROM book", changes=("a change",))
    sql, result, what = take_rewrite(broken, failed, run)
    assert (sql, what) == (written, None) and not result.ok
    assert ran == ["SELECT still_missing FROM book", written]


def test_rewrite_or_none_never_raises(books):
    class Broken:
        tables = property(lambda self: 1 / 0)
        foreign_keys = ()
    assert rewrite_or_none(books, "no such column: T1.title",
                           "SELECT T1.title FROM author AS T1", Broken()) is None
