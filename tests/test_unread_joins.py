"""Joins of a table nothing reads (:mod:`agents.rules.unread_joins`), on a small school database."""

import sqlite3

import pytest

from agents.db.database import open_database
from agents.rules.unread_joins import tables_named, unread_joins


@pytest.fixture(scope="module")
def schema(tmp_path_factory):
    path = tmp_path_factory.mktemp("school") / "school.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE teacher (teacher_id INTEGER PRIMARY KEY, name TEXT, hometown TEXT);
        CREATE TABLE course (course_id INTEGER PRIMARY KEY, title TEXT);
        CREATE TABLE course_arrange (course_id INTEGER REFERENCES course(course_id),
                                     teacher_id INTEGER REFERENCES teacher(teacher_id),
                                     grade INTEGER);
    """)
    conn.close()
    db = open_database(path)
    yield db.schema
    db.close()


@pytest.mark.parametrize("sql, expected, tables", [
    ("SELECT T1.hometown FROM teacher AS T1 JOIN course_arrange AS T2 "
     "ON T1.teacher_id = T2.teacher_id GROUP BY T1.hometown HAVING COUNT(*) >= 2",
     "SELECT T1.hometown FROM teacher AS T1 GROUP BY T1.hometown HAVING COUNT(*) >= 2",
     ["course_arrange"]),
    # unqualified columns that the joined table does not have
    ("SELECT hometown FROM teacher JOIN course_arrange "
     "ON teacher.teacher_id = course_arrange.teacher_id",
     "SELECT hometown FROM teacher", ["course_arrange"]),
    # a join read only by the condition of a join taken out goes next
    ("SELECT COUNT(*) FROM teacher AS T1 JOIN course_arrange AS T2 "
     "ON T1.teacher_id = T2.teacher_id JOIN course AS T3 ON T2.course_id = T3.course_id",
     "SELECT COUNT(*) FROM teacher AS T1", ["course", "course_arrange"]),
    # a condition in parentheses; one table joined twice is named once
    ("SELECT T1.name FROM teacher AS T1 JOIN course_arrange AS A ON (T1.teacher_id = "
     "A.teacher_id) JOIN course_arrange AS B ON T1.teacher_id = B.teacher_id",
     "SELECT T1.name FROM teacher AS T1", ["course_arrange"]),
])
def test_a_join_read_only_in_its_condition_is_taken_out(schema, sql, expected, tables):
    found = unread_joins(sql, schema)
    assert found is not None and found.sql == expected and found.tables == tables


@pytest.mark.parametrize("sql", [
    # read outside the condition: qualified, unqualified, or by a star
    "SELECT T1.name FROM teacher AS T1 JOIN course_arrange AS T2 "
    "ON T1.teacher_id = T2.teacher_id WHERE T2.grade > 1",
    "SELECT name FROM teacher JOIN course_arrange "
    "ON teacher.teacher_id = course_arrange.teacher_id WHERE grade = 1",
    "SELECT * FROM teacher JOIN course_arrange ON teacher.teacher_id = course_arrange.teacher_id",
    "SELECT T2.* FROM teacher AS T1 JOIN course_arrange AS T2 ON T1.teacher_id = T2.teacher_id",
    # an outer join, or a condition that is more than the join
    "SELECT COUNT(*) FROM teacher AS T1 LEFT JOIN course_arrange AS T2 "
    "ON T1.teacher_id = T2.teacher_id",
    "SELECT T1.name FROM teacher AS T1 JOIN course_arrange AS T2 "
    "ON T1.teacher_id = T2.teacher_id AND T2.grade = 1",
    # the alias named again in a subquery: left alone rather than guessed
    "SELECT T1.name FROM teacher AS T1 JOIN course_arrange AS T2 ON T1.teacher_id = "
    "T2.teacher_id WHERE T1.teacher_id IN (SELECT T2.teacher_id FROM course_arrange AS T2)",
    # a join inside a subquery or a branch of EXCEPT decides what the outer query keeps
    "SELECT name FROM teacher WHERE teacher_id NOT IN (SELECT T2.teacher_id FROM "
    "course_arrange AS T2 JOIN course AS T3 ON T2.course_id = T3.course_id)",
    "SELECT hometown FROM teacher EXCEPT SELECT T1.hometown FROM teacher AS T1 "
    "JOIN course_arrange AS T2 ON T1.teacher_id = T2.teacher_id",
    # no join, an unknown table, SQL that cannot be read
    "SELECT name FROM teacher",
    "SELECT T1.name FROM teacher AS T1 JOIN missing AS T2 ON T1.teacher_id = T2.teacher_id",
    "SELECT name FROM (",
    "",
])
def test_anything_else_is_left_alone(schema, sql):
    assert unread_joins(sql, schema) is None


@pytest.mark.parametrize("sql, expected", [
    # the condition names no column of the joined table: a filter on the others, kept
    ("SELECT T1.name FROM teacher AS T1 JOIN course AS T2 ON T1.hometown LIKE '%West%'",
     "SELECT T1.name FROM teacher AS T1 WHERE T1.hometown LIKE '%West%'"),
    ("SELECT name FROM teacher JOIN course ON hometown = 'Bolton' WHERE teacher_id > 1",
     "SELECT name FROM teacher WHERE teacher_id > 1 AND hometown = 'Bolton'"),
])
def test_a_join_whose_condition_names_none_of_its_columns_becomes_a_filter(schema, sql,
                                                                           expected):
    """Such a join pairs each row the condition keeps with every row of the table: the rows
    repeat as many times as the table has rows (or vanish when it has none)."""
    found = unread_joins(sql, schema)
    assert found is not None and found.sql == expected and found.tables == ["course"]


@pytest.mark.parametrize("sql", [
    # the table read elsewhere, a bare name the joined table has, a condition with no column
    "SELECT T1.name, T2.title FROM teacher AS T1 JOIN course AS T2 ON T1.hometown = 'Bolton'",
    "SELECT T1.name FROM teacher AS T1 JOIN course AS T2 ON title = 'Math'",
    "SELECT T1.name FROM teacher AS T1 JOIN course AS T2 ON 1 = 1",
    # a RIGHT join after it keeps rows that the filter, moved to WHERE, would drop
    "SELECT T3.grade FROM teacher AS T1 JOIN course AS T2 ON T1.hometown = 'West' "
    "RIGHT JOIN course_arrange AS T3 ON T1.teacher_id = T3.teacher_id",
])
def test_a_join_whose_condition_reads_no_column_is_left_alone_otherwise(schema, sql):
    assert unread_joins(sql, schema) is None


def test_tables_named_reads_every_table_or_none():
    assert tables_named("SELECT a FROM x JOIN Y ON x.a = Y.b") == {"x", "y"}
    assert tables_named("SELECT (") == set()


@pytest.mark.parametrize("sql, expected, tables", [
    # the FROM table, read only in the first join's condition
    ("SELECT T2.grade FROM teacher AS T1 JOIN course_arrange AS T2 "
     "ON T1.teacher_id = T2.teacher_id",
     "SELECT T2.grade FROM course_arrange AS T2", ["teacher"]),
    # then the table that took its place, read only by the next join's condition
    ("SELECT T3.title FROM teacher AS T1 JOIN course_arrange AS T2 ON T1.teacher_id = "
     "T2.teacher_id JOIN course AS T3 ON T2.course_id = T3.course_id",
     "SELECT T3.title FROM course AS T3", ["teacher", "course_arrange"]),
])
def test_with_from_table_the_first_table_is_one_of_the_joins(schema, sql, expected, tables):
    assert unread_joins(sql, schema) is None
    found = unread_joins(sql, schema, from_table=True)
    assert found is not None and found.sql == expected and found.tables == tables


@pytest.mark.parametrize("sql", [
    # read elsewhere, a bridge between two joins, an outer join, a subquery as the first join
    "SELECT T1.name, T2.grade FROM teacher AS T1 JOIN course_arrange AS T2 "
    "ON T1.teacher_id = T2.teacher_id",
    "SELECT T2.grade, T3.name FROM course_arrange AS T2 JOIN teacher AS T1 ON T1.teacher_id = "
    "T2.teacher_id JOIN teacher AS T3 ON T1.teacher_id = T3.teacher_id",
    "SELECT T2.grade FROM teacher AS T1 LEFT JOIN course_arrange AS T2 "
    "ON T1.teacher_id = T2.teacher_id",
    "SELECT S.grade FROM teacher AS T1 JOIN (SELECT * FROM course_arrange) AS S "
    "ON T1.teacher_id = S.teacher_id",
])
def test_a_from_table_that_is_read_stays(schema, sql):
    assert unread_joins(sql, schema, from_table=True) is None


def test_a_keep_rule_keeps_the_from_table_in_its_place(schema):
    sql = ("SELECT T2.grade FROM teacher AS T1 JOIN course_arrange AS T2 "
           "ON T1.teacher_id = T2.teacher_id")
    assert unread_joins(sql, schema, keep=lambda join, select: True, from_table=True) is None


@pytest.mark.parametrize("sql, expected, tables", [
    # the key read outside the condition is read from the other side of the join
    ("SELECT T1.teacher_id FROM teacher AS T1 JOIN course_arrange AS T2 "
     "ON T1.teacher_id = T2.teacher_id WHERE T2.grade > 1",
     "SELECT T2.teacher_id AS teacher_id FROM course_arrange AS T2 WHERE T2.grade > 1",
     ["teacher"]),   # the column listed keeps its name
    ("SELECT T1.name FROM teacher AS T1 JOIN course_arrange AS T2 ON T1.teacher_id = "
     "T2.teacher_id GROUP BY T2.teacher_id",
     "SELECT T1.name FROM teacher AS T1 GROUP BY T1.teacher_id", ["course_arrange"]),
    # in a subquery that names no source of that name too
    ("SELECT T1.name FROM teacher AS T1 JOIN course_arrange AS T2 ON T1.teacher_id = "
     "T2.teacher_id WHERE T2.course_id IN (SELECT course_id FROM course)",
     None, None),
])
def test_through_keys_a_table_read_only_by_its_key_is_left_out(schema, sql, expected, tables):
    found = unread_joins(sql, schema, from_table=True, through_keys=True)
    if expected is None:
        assert found is None
    else:
        assert found is not None and found.sql == expected and found.tables == tables
        assert found.by_key == tables


def test_through_keys_leaves_a_read_table_as_written(schema):
    # the key is read, and so is another column: nothing is replaced
    sql = ("SELECT T1.teacher_id, T1.name FROM teacher AS T1 JOIN course_arrange AS T2 "
           "ON T1.teacher_id = T2.teacher_id")
    found = unread_joins(sql, schema, through_keys=True)
    assert found is not None and found.tables == ["course_arrange"]
    assert found.sql == "SELECT T1.teacher_id, T1.name FROM teacher AS T1"
    assert found.by_key == []   # left out as unread, nothing read through its key
    kept = ("SELECT T1.teacher_id, T1.name, T2.grade FROM teacher AS T1 JOIN course_arrange "
            "AS T2 ON T1.teacher_id = T2.teacher_id")
    assert unread_joins(kept, schema, from_table=True, through_keys=True) is None


def test_through_keys_does_not_reach_a_subquery_s_own_alias(schema):
    # inside the subquery T2 is its own course_arrange, not the joined one: its columns are
    # not replaced, and the alias named again leaves the statement alone, as without the option
    sql = ("SELECT T1.name FROM teacher AS T1 JOIN course_arrange AS T2 ON T1.teacher_id = "
           "T2.teacher_id WHERE T1.teacher_id IN (SELECT T2.teacher_id FROM course_arrange "
           "AS T2)")
    assert unread_joins(sql, schema, through_keys=True) is None
    # a correlated read of the joined T2 in a subquery of its own sources is replaced
    correlated = ("SELECT T1.name FROM teacher AS T1 JOIN course_arrange AS T2 ON "
                  "T1.teacher_id = T2.teacher_id WHERE EXISTS (SELECT 1 FROM course AS C "
                  "WHERE C.course_id > T2.teacher_id)")
    found = unread_joins(correlated, schema, through_keys=True)
    assert found is not None and found.tables == ["course_arrange"]
    assert "C.course_id > T1.teacher_id" in found.sql


@pytest.mark.parametrize("sql", [
    # the replacement's alias is a source of the subquery's own: T1 there is course
    "SELECT T1.name FROM teacher AS T1 JOIN course_arrange AS T2 ON T1.teacher_id = "
    "T2.teacher_id WHERE EXISTS (SELECT 1 FROM course AS T1 WHERE T1.course_id = "
    "T2.teacher_id + 1)",
    "SELECT T2.grade FROM teacher AS T1 JOIN course_arrange AS T2 ON T1.teacher_id = "
    "T2.teacher_id WHERE EXISTS (SELECT 1 FROM course AS T2 WHERE T2.course_id = "
    "T1.teacher_id + 1)",
    "SELECT teacher.name FROM teacher JOIN course_arrange ON teacher.teacher_id = "
    "course_arrange.teacher_id WHERE EXISTS (SELECT 1 FROM teacher WHERE teacher.teacher_id = "
    "course_arrange.teacher_id + 1)",
    # equal values of two affinities are not the same value: '10' < 5 is not 10 < 5
    "SELECT T2.label FROM teacher AS T1 JOIN tcode AS T2 ON T1.teacher_id = T2.code "
    "WHERE T1.teacher_id < 5",
])
def test_through_keys_only_where_the_other_column_is_the_same_value(typed_schema, sql):
    assert unread_joins(sql, typed_schema, from_table=True, through_keys=True) is None


@pytest.mark.parametrize("options", [{}, {"from_table": True, "through_keys": True}])
def test_a_statement_with_using_or_natural_is_left_alone(typed_schema, options):
    # USING (name) matches whichever earlier table has a name: leaving one out re-pairs rows
    for join in ("JOIN c AS T3 USING (name)", "NATURAL JOIN c AS T3"):
        sql = f"SELECT T2.v, T3.w FROM a AS T1 JOIN b AS T2 ON T1.id = T2.aid {join}"
        assert unread_joins(sql, typed_schema, **options) is None
        sql = (f"SELECT T2.v, T3.w FROM b AS T2 JOIN a AS T1 ON T1.id = T2.aid {join}")
        assert unread_joins(sql, typed_schema, **options) is None


@pytest.fixture(scope="module")
def typed_schema(tmp_path_factory):
    path = tmp_path_factory.mktemp("typed") / "typed.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE teacher (teacher_id INTEGER PRIMARY KEY, name TEXT);
        CREATE TABLE course (course_id INTEGER PRIMARY KEY, title TEXT);
        CREATE TABLE course_arrange (course_id INTEGER, teacher_id INTEGER, grade INTEGER);
        CREATE TABLE tcode (code TEXT, label TEXT);
        CREATE TABLE a (id INTEGER, name TEXT);
        CREATE TABLE b (aid INTEGER, name TEXT, v INTEGER);
        CREATE TABLE c (name TEXT, w INTEGER);
    """)
    conn.close()
    db = open_database(path)
    yield db.schema
    db.close()
