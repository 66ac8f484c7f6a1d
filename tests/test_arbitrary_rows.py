"""The arbitrary-row check: an aggregate beside an ungrouped column, read with sqlglot."""

from __future__ import annotations

import pytest

from agents.rules.arbitrary_rows import arbitrary_row_aggregate


@pytest.mark.parametrize("sql, found", [
    ("SELECT T1.name, T1.theme, COUNT(T2.singer_id) FROM concert AS T1 JOIN singer_in_concert "
     "AS T2 ON T1.concert_id = T2.concert_id",
     "COUNT(T2.singer_id) beside T1.name without GROUP BY"),
    ("SELECT directed_by, count(*) FROM cartoon WHERE directed_by IN ('a', 'b')",
     "COUNT(*) beside directed_by without GROUP BY"),
    ("SELECT name AS n, count(*) AS c FROM t", "COUNT(*) beside name without GROUP BY"),
    ("SELECT count(*) + age FROM t", "COUNT(*) beside age without GROUP BY"),
    # two extremes: no single row holds both, so the bare column is arbitrary again
    ("SELECT name, max(age), min(age) FROM singer", "MAX(age) beside name without GROUP BY"),
    ("SELECT name, group_concat(song) FROM t", "GROUP_CONCAT(song) beside name without GROUP BY"),
    # in a subquery or one branch of a compound query
    ("SELECT a FROM t WHERE b IN (SELECT x, count(*) FROM u)",
     "COUNT(*) beside x without GROUP BY"),
    ("SELECT name FROM t UNION SELECT name, count(*) FROM u",
     "COUNT(*) beside name without GROUP BY"),
    # pinned only under an OR, or to another column: not one value
    ("SELECT state, count(*) FROM invoices WHERE state = 'CA' OR total > 9",
     "COUNT(*) beside state without GROUP BY"),
    ("SELECT a, count(*) FROM t WHERE a = b", "COUNT(*) beside a without GROUP BY"),
])
def test_finds_an_aggregate_beside_an_ungrouped_column(sql, found):
    assert arbitrary_row_aggregate(sql) == found


@pytest.mark.parametrize("sql", [
    "SELECT country, COUNT(*) FROM singer GROUP BY country",
    "SELECT count(*) FROM singer",
    "SELECT avg(age), min(age), max(age) FROM singer",
    "SELECT name, max(age) FROM singer",          # SQLite: the row holding the maximum
    "SELECT name, MIN(age) FROM singer WHERE country = 'France'",
    "SELECT name, max(a, b) FROM t",              # two arguments: the scalar max()
    "SELECT name, (SELECT count(*) FROM concert) FROM singer",
    "SELECT name, count(*) OVER () FROM singer",  # a window: computed per row
    "SELECT count(*) FILTER (WHERE age > 20), avg(age) FROM singer",
    "SELECT 'all', count(*) FROM singer",
    "SELECT name FROM singer ORDER BY (SELECT count(*) FROM concert)",
    # exactly one min()/max() among the aggregates: SQLite still takes its row
    "SELECT name, max(age), count(*) FROM singer",
    # every bare column fixed to one value by the WHERE
    "SELECT state, COUNT(*), SUM(total) FROM invoices WHERE state = 'CA'",
    'SELECT billing_state, COUNT(*) FROM invoices WHERE total > 1 AND billing_state = "CA"',
    # a column of the outer query is one value for the whole subquery
    "SELECT a FROM t WHERE b > (SELECT count(*) + t.c FROM u)",
    # nested deeper than sqlglot reads: never an exception, the database judges it
    "SELECT " + "(" * 120 + "1" + ")" * 120 + ", count(*), name FROM t",
    "",
    None,
    "SELECT FROM WHERE ((",                       # unreadable: the database judges it
])
def test_leaves_other_queries_alone(sql):
    assert arbitrary_row_aggregate(sql) is None
