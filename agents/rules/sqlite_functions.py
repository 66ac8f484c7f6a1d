"""What SQLite writes instead of a function it does not have.

Models trained mostly on MySQL, PostgreSQL and SQL Server write ``YEAR(order_date)``,
``CONCAT(first, last)`` or ``DATEDIFF(a, b)``; SQLite answers "no such function: YEAR", and a
repair that is only shown that error tends to write the same call again (it knows no other
way to say "the year of a date"). The hint names SQLite's own way of writing it. It is given
only when SQLite itself reports the function missing, so a newer SQLite that has one of these
(3.44 added ``concat`` and ``string_agg``) never sees its hint.
"""

from __future__ import annotations

import re

_NO_FUNCTION = re.compile(r"no such function:\s*(?P<name>[A-Za-z_][A-Za-z_0-9]*)", re.I)

_DATE_PART = ("strftime('{fmt}', {what}) for a date stored as text such as '2024-03-09' (it "
              "gives text such as '{example}'; compare it with text)")

# function name (upper case) -> how SQLite writes it. Only calls SQLite can reach as "no such
# function" are listed: MySQL's DATE_ADD(d, INTERVAL 7 DAY), SQL Server's DATEADD(day, ...) and
# DATEPART(year, ...) and POSITION('a' IN s) fail earlier, as a syntax or name error.
SQLITE_WAY = {
    "YEAR": _DATE_PART.format(fmt="%Y", what="date_column", example="2024"),
    "MONTH": _DATE_PART.format(fmt="%m", what="date_column", example="03"),
    "DAY": _DATE_PART.format(fmt="%d", what="date_column", example="09"),
    "DAYOFMONTH": _DATE_PART.format(fmt="%d", what="date_column", example="09"),
    "HOUR": _DATE_PART.format(fmt="%H", what="time_column", example="14"),
    "MINUTE": _DATE_PART.format(fmt="%M", what="time_column", example="05"),
    "WEEKDAY": "strftime('%w', date_column) ('0' is Sunday, where WEEKDAY's 0 is Monday)",
    "DAYOFWEEK": "strftime('%w', date_column) ('0' is Sunday, where DAYOFWEEK's 1 is Sunday)",
    "DATE_FORMAT": "strftime(format, date_column) with SQLite's codes (%Y %m %d %H %M %S), "
                   "e.g. strftime('%Y-%m', date_column)",
    "TO_CHAR": "strftime(format, date_column) with SQLite's codes (%Y %m %d %H %M %S), "
               "e.g. strftime('%Y-%m', date_column)",
    "DATE_TRUNC": "date(date_column, 'start of month') (or 'start of year')",
    "TO_DATE": "date(text) (SQLite stores dates as 'YYYY-MM-DD' text)",
    "STR_TO_DATE": "date(text) (SQLite stores dates as 'YYYY-MM-DD' text)",
    "NOW": "datetime('now')",
    "GETDATE": "datetime('now')",
    "SYSDATE": "datetime('now')",
    "CURDATE": "date('now')",
    "TODAY": "date('now')",
    "DATEDIFF": "julianday(end_date) - julianday(start_date) (days, with a fraction when the "
                "values have times)",
    "ADDDATE": "date(date_column, '+7 days') (or '-1 month', '+1 year')",
    "CONCAT": "a || b (|| joins text)",
    "CONCAT_WS": "a || ', ' || b",
    "LEN": "length(text)",
    "CHAR_LENGTH": "length(text)",
    "CHARACTER_LENGTH": "length(text)",
    "NVL": "ifnull(value, replacement)",
    "IF": "iif(condition, value_if_true, value_if_false) or CASE WHEN ... THEN ... ELSE ... END",
    "STRING_AGG": "group_concat(value, separator)",
    "LISTAGG": "group_concat(value, separator)",
    "ARRAY_AGG": "group_concat(value, separator)",
    "LOCATE": "instr(text, part) (the text first, then what to find in it)",
    "CHARINDEX": "instr(text, part) (the text first, then what to find in it)",
    "STRPOS": "instr(text, part)",
    "LCASE": "lower(text)",
    "UCASE": "upper(text)",
    "TRUNCATE": "CAST(number AS INTEGER) (towards zero), or round(number, digits)",
    "MEDIAN": "no single function: order the values and take the middle row (LIMIT 1 OFFSET ...)",
    "STDDEV": "no single function: sqrt(max(avg(x * x) - avg(x) * avg(x), 0)) for the "
              "population (times count(x) / (count(x) - 1) inside the root for a sample)",
    "STDEV": "no single function: sqrt(max(avg(x * x) - avg(x) * avg(x), 0) * count(x) / "
             "(count(x) - 1)) for a sample",
    "VARIANCE": "no single function: (avg(x * x) - avg(x) * avg(x)) * count(x) / (count(x) - 1) "
                "for a sample",
}


def function_hint(error: str | None) -> str | None:
    """A hint for "no such function: NAME": how SQLite writes it, or a short reminder of
    SQLite's own functions when the name is not a known one. None for any other error."""
    match = _NO_FUNCTION.search(error or "")
    if not match:
        return None
    name = match.group("name")
    way = SQLITE_WAY.get(name.upper())
    if way:
        return f"SQLite has no function {name}(); write {way} instead."
    return (f"SQLite has no function {name}(); use SQLite's own functions (strftime and date "
            "for dates, substr, instr, length, ifnull, iif, || to join text).")


def execution_hint(db, error: str | None, sql: str, schema, *, timeout: float) -> str | None:
    """This rule's action at the execution hint (:func:`agents.rules.registry.hint_at_execution`)."""
    return function_hint(error)
