"""What SQLite writes instead of a function it does not have.

Models trained mostly on MySQL, PostgreSQL and SQL Server write ``YEAR(order_date)``,
``CONCAT(first, last)`` or ``DATEDIFF(a, b)``; SQLite answers "no such function: YEAR", and a
repair that is only shown that error tends to write the same call again (it knows no other
way to say "the year of a date"). The hint names SQLite's own way of writing it. The table
lists only functions SQLite lacks (checked against the SQLite this project ships with); a
function it has is never hinted, whatever the error says.
"""

from __future__ import annotations

import re

_NO_FUNCTION = re.compile(r"no such function:\s*(?P<name>[A-Za-z_][A-Za-z_0-9]*)", re.I)

_DATE_PART = "strftime('{fmt}', {what}) (text such as '{example}'; compare it with text)"

# function name (upper case) -> how SQLite writes it
SQLITE_WAY = {
    "YEAR": _DATE_PART.format(fmt="%Y", what="date_column", example="2024"),
    "MONTH": _DATE_PART.format(fmt="%m", what="date_column", example="03"),
    "DAY": _DATE_PART.format(fmt="%d", what="date_column", example="09"),
    "DAYOFMONTH": _DATE_PART.format(fmt="%d", what="date_column", example="09"),
    "HOUR": _DATE_PART.format(fmt="%H", what="time_column", example="14"),
    "MINUTE": _DATE_PART.format(fmt="%M", what="time_column", example="05"),
    "WEEKDAY": "strftime('%w', date_column) ('0' is Sunday)",
    "DAYOFWEEK": "strftime('%w', date_column) ('0' is Sunday)",
    "DATE_FORMAT": "strftime(format, date_column), e.g. strftime('%Y-%m', date_column)",
    "TO_CHAR": "strftime(format, date_column), e.g. strftime('%Y-%m', date_column)",
    "DATE_PART": "strftime(format, date_column), e.g. strftime('%Y', date_column) for the year",
    "DATEPART": "strftime(format, date_column), e.g. strftime('%Y', date_column) for the year",
    "DATE_TRUNC": "strftime(format, date_column), e.g. strftime('%Y-%m', date_column) for the "
                  "month",
    "TO_DATE": "date(text) (SQLite stores dates as 'YYYY-MM-DD' text)",
    "STR_TO_DATE": "date(text) (SQLite stores dates as 'YYYY-MM-DD' text)",
    "NOW": "datetime('now')",
    "GETDATE": "datetime('now')",
    "SYSDATE": "datetime('now')",
    "CURDATE": "date('now')",
    "TODAY": "date('now')",
    "DATEDIFF": "julianday(end_date) - julianday(start_date) (a number of days)",
    "TIMESTAMPDIFF": "julianday(end_date) - julianday(start_date) (a number of days)",
    "DATE_ADD": "date(date_column, '+7 days') (or '-1 month', '+1 year')",
    "DATEADD": "date(date_column, '+7 days') (or '-1 month', '+1 year')",
    "DATE_SUB": "date(date_column, '-7 days')",
    "ADDDATE": "date(date_column, '+7 days')",
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
    "LOCATE": "instr(text, part)",
    "POSITION": "instr(text, part)",
    "CHARINDEX": "instr(text, part)",
    "STRPOS": "instr(text, part)",
    "LCASE": "lower(text)",
    "UCASE": "upper(text)",
    "TRUNCATE": "CAST(number AS INTEGER) (towards zero), or round(number, digits)",
    "MEDIAN": "no single function: order the values and take the middle row (LIMIT 1 OFFSET ...)",
    "STDDEV": "no single function: sqrt(avg(x * x) - avg(x) * avg(x)) (population)",
    "STDEV": "no single function: sqrt(avg(x * x) - avg(x) * avg(x)) (population)",
    "VARIANCE": "no single function: avg(x * x) - avg(x) * avg(x) (population)",
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
