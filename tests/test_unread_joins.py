"""Joins of a table nothing reads (:mod:`agents.unread_joins`), on a small school database."""

import sqlite3

import pytest

from agents.database import open_database
from agents.unread_joins import tables_named, unread_joins


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


def test_tables_named_reads_every_table_or_none():
    assert tables_named("SELECT a FROM x JOIN Y ON x.a = Y.b") == {"x", "y"}
    assert tables_named("SELECT (") == set()
