"""How a name or a string is written in SQLite's SQL: bare or quoted, as DDL, MAC-SQL and
CSMA's prompts show it. Kept apart from the schema model so every renderer can use it."""

from __future__ import annotations

import re

# SQLite's keywords (https://sqlite.org/lang_keywords.html): a name equal to one is quoted.
SQLITE_KEYWORDS = frozenset("""
ABORT ACTION ADD AFTER ALL ALTER ALWAYS ANALYZE AND AS ASC ATTACH AUTOINCREMENT BEFORE BEGIN
BETWEEN BY CASCADE CASE CAST CHECK COLLATE COLUMN COMMIT CONFLICT CONSTRAINT CREATE CROSS CURRENT
CURRENT_DATE CURRENT_TIME CURRENT_TIMESTAMP DATABASE DEFAULT DEFERRABLE DEFERRED DELETE DESC
DETACH DISTINCT DO DROP EACH ELSE END ESCAPE EXCEPT EXCLUDE EXCLUSIVE EXISTS EXPLAIN FAIL FILTER
FIRST FOLLOWING FOR FOREIGN FROM FULL GENERATED GLOB GROUP GROUPS HAVING IF IGNORE IMMEDIATE IN
INDEX INDEXED INITIALLY INNER INSERT INSTEAD INTERSECT INTO IS ISNULL JOIN KEY LAST LEFT LIKE
LIMIT MATCH MATERIALIZED NATURAL NO NOT NOTHING NOTNULL NULL NULLS OF OFFSET ON OR ORDER OTHERS
OUTER OVER PARTITION PLAN PRAGMA PRECEDING PRIMARY QUERY RAISE RANGE RECURSIVE REFERENCES REGEXP
REINDEX RELEASE RENAME REPLACE RESTRICT RETURNING RIGHT ROLLBACK ROW ROWS SAVEPOINT SELECT SET
TABLE TEMP TEMPORARY THEN TIES TO TRANSACTION TRIGGER UNBOUNDED UNION UNIQUE UPDATE USING VACUUM
VALUES VIEW VIRTUAL WHEN WHERE WINDOW WITH WITHOUT
""".split())

_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def is_plain_name(name: str) -> bool:
    """True when ``name`` can be written unquoted in SQL (a simple word, not a keyword)."""
    return bool(_PLAIN_NAME.match(name)) and name.upper() not in SQLITE_KEYWORDS


def quote_identifier(name: str) -> str:
    """``name`` as an SQL identifier in double quotes, inner quotes doubled; always safe."""
    return '"' + name.replace('"', '""') + '"'


def sql_name(name: str) -> str:
    """``name`` as written in DDL: bare when plain, double-quoted otherwise."""
    return name if is_plain_name(name) else quote_identifier(name)


def sql_string(text: str) -> str:
    """``text`` as an SQL string literal: single quotes, inner ones doubled."""
    return "'" + text.replace("'", "''") + "'"


def backtick_name(name: str) -> str:
    """``name`` in backticks (inner backticks doubled), as MAC-SQL writes columns."""
    return "`" + name.replace("`", "``") + "`"


def macsql_name(name: str) -> str:
    return name if is_plain_name(name) else backtick_name(name)


def readable_name(name: str) -> str:
    """A column name as words, the description when none is known: 'GNPOld' -> 'gnp old'."""
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", " ", name)
    words = re.sub(r"[_\s]+", " ", words).strip()
    return (words or name).lower()
