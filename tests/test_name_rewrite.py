"""A query that fails on a column name, rewritten to take the column from the table that has it:
only where that is one clear change, and only offered when SQLite runs the result."""

from __future__ import annotations

import pytest

from agents.database import open_database
from agents.engine import Pipeline, Step, run_to_end, start_run
from agents.error_hints import execute_with_hint
from agents.name_rewrite import hint_with_rewrite, rewrite_name_error, runnable_rewrite
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
