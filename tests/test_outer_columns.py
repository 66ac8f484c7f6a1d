"""The outer-column check: a subquery whose SELECT list takes a column of the outer query."""

from __future__ import annotations

import pytest

from agents.db.database import open_database
from agents.rules.outer_columns import outer_column_in_subquery
from dbfactory import make_db

MUSEUMS = """
CREATE TABLE museum (Museum_ID INTEGER PRIMARY KEY, Name TEXT);
CREATE TABLE visitor (ID INTEGER PRIMARY KEY, Name TEXT);
CREATE TABLE visit (Museum_ID INTEGER REFERENCES museum(Museum_ID),
                    visitor_ID INTEGER REFERENCES visitor(ID));
"""


@pytest.fixture
def schema(tmp_path):
    db = open_database(make_db(tmp_path / "museums.sqlite", MUSEUMS))
    yield db.schema
    db.close()


@pytest.mark.parametrize("sql, found", [
    ("SELECT Name FROM museum WHERE Museum_ID NOT IN (SELECT Museum_ID FROM visitor)",
     "the subquery (SELECT Museum_ID FROM visitor) selects Museum_ID of the outer query's "
     "museum, not of its own tables (visitor), so it returns each outer row's own value"),
    # qualified with the outer alias, although a table of the subquery has the column
    ("SELECT T1.Name FROM museum AS T1 WHERE T1.Museum_ID IN (SELECT T1.Museum_ID FROM visit "
     "AS T3 JOIN visitor AS T2 ON T2.ID = T3.visitor_ID)",
     "the subquery (SELECT T1.Museum_ID FROM visit AS T3 JOIN visitor AS T2 ON T2.ID = "
     "T3.visitor_ID) selects Museum_ID of the outer query's T1, not of its own tables (visit, "
     "visitor), so it returns each outer row's own value"),
    # in one branch of a compound subquery
    ("SELECT Name FROM museum WHERE Museum_ID IN (SELECT Museum_ID FROM visit UNION "
     "SELECT Museum_ID FROM visitor)",
     "the subquery (SELECT Museum_ID FROM visitor) selects Museum_ID of the outer query's "
     "museum, not of its own tables (visitor), so it returns each outer row's own value"),
])
def test_finds_a_subquery_selecting_an_outer_column(schema, sql, found):
    assert outer_column_in_subquery(sql, schema) == found


@pytest.mark.parametrize("sql", [
    "SELECT Name FROM museum WHERE Museum_ID NOT IN (SELECT Museum_ID FROM visit)",
    # correlated in the WHERE: the usual, meaningful kind
    "SELECT Name FROM museum AS m WHERE EXISTS (SELECT 1 FROM visit AS v "
    "WHERE v.Museum_ID = m.Museum_ID)",
    "SELECT m.Name, (SELECT count(*) FROM visit WHERE visit.Museum_ID = m.Museum_ID) "
    "FROM museum AS m",
    "SELECT Name FROM (SELECT Name, Museum_ID FROM museum) AS t WHERE Museum_ID > 1",
    "SELECT Name FROM museum",
    # the SELECT list of an EXISTS means nothing
    "SELECT Name FROM museum AS m WHERE NOT EXISTS (SELECT Name FROM visit AS v "
    "WHERE v.Museum_ID = m.Museum_ID)",
    # branches of a top-level compound query, a CTE, a table in FROM: no outer query there;
    # names sqlglot cannot resolve (rowid, a double-quoted string) are the database's to judge
    "SELECT rowid FROM museum UNION SELECT Name FROM visitor",
    'SELECT Name, "none" FROM museum UNION SELECT Name, "x" FROM visitor',
    'SELECT n FROM (SELECT Name AS n, "a" AS k FROM museum)',
    "WITH c AS (SELECT Museum_ID FROM visitor) SELECT * FROM c",
    # nested deeper than sqlglot reads: never an exception
    "SELECT " + "(" * 120 + "1" + ")" * 120 + " FROM museum WHERE Museum_ID IN "
    "(SELECT Museum_ID FROM visitor)",
    "SELECT nothing FROM nowhere WHERE x IN (SELECT y FROM elsewhere)",  # unknown tables
    "SELECT FROM WHERE ((",
    "",
    None,
])
def test_leaves_other_queries_alone(schema, sql):
    assert outer_column_in_subquery(sql, schema) is None
