"""A unit in the question the SQL does not convert to: minutes asked, milliseconds compared.

Schemas say units in column names (``duration_ms``, ``price_cents``, ``length_seconds``); a
question says them in words ("longer than 5 minutes", "in dollars"). Where the question names
a unit, the SQL reads a column whose name carries another unit of the same quantity, and the
SQL does no arithmetic on that column (no ``/`` or ``*``), the result is likely in the wrong
unit. Names only: no value is read.
"""

from __future__ import annotations

import re

from sqlglot import exp

from agents.answer.sqlshape import outer_select

# quantity -> {unit: (question words, column-name parts)}
_UNITS = {
    "time": {
        "milliseconds": (("millisecond", "milliseconds", "ms"), ("ms", "millis",
                                                                 "milliseconds")),
        "seconds": (("seconds", "sec", "secs"), ("secs", "seconds")),
        "minutes": (("minute", "minutes", "mins"), ("mins", "minutes")),
        "hours": (("hour", "hours", "hrs"), ("hrs", "hours")),
    },
    "money": {
        "cents": (("cent", "cents", "pence"), ("cents", "pence")),
        "units": (("dollar", "dollars", "euro", "euros", "pound", "pounds", "usd", "eur"),
                  ("dollars", "usd", "eur", "euros")),
    },
    "size": {
        "bytes": (("byte", "bytes"), ("bytes",)),
        "kilobytes": (("kilobyte", "kilobytes", "kb"), ("kb",)),
        "megabytes": (("megabyte", "megabytes", "mb"), ("mb",)),
    },
}
_WORD = re.compile(r"[a-z]+")
_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")  # SizeMB -> Size, MB; duration_ms


def _parts(name: str) -> set[str]:
    return {p.casefold() for chunk in re.split(r"[^A-Za-z]+", name) for p in _PART.findall(chunk)}


def _numbers(question: str) -> set[float]:
    found = set()
    for text in re.findall(r"\d[\d,]*(?:\.\d+)?", question or ""):
        try:
            found.add(float(text.replace(",", "")))
        except ValueError:
            continue
    return found


def _unconverted(select, column: exp.Column, question: str) -> bool:
    """Whether ``column`` reaches the answer in its own unit: selected as it is (alone or in
    an aggregate), or compared with a number written as the question wrote it."""
    def arithmetic(node) -> bool:
        parent = node.parent
        while parent is not None and parent is not select:
            if isinstance(parent, (exp.Div, exp.Mul)):
                return True
            parent = parent.parent
        return False

    if arithmetic(column):
        return False
    node, parent = column, column.parent
    while parent is not None and parent is not select:
        if isinstance(parent, (exp.GT, exp.GTE, exp.LT, exp.LTE, exp.EQ, exp.Between)):
            numbers = {float(l.this) for l in parent.find_all(exp.Literal)
                       if not l.is_string and _is_number(l.this)}
            return bool(numbers & _numbers(question))
        if isinstance(parent, (exp.Order, exp.Group, exp.Join)):
            return False
        node, parent = parent, parent.parent
    return any(node is p for p in select.expressions)


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def unit_doubt(question: str, sql: str) -> str | None:
    """Why the SQL's column is in another unit than the question's, or None."""
    select = outer_select(sql)
    if select is None:
        return None
    words = set(_WORD.findall((question or "").casefold()))
    for units in _UNITS.values():
        asked = [(u, sorted(words & set(qwords))[0]) for u, (qwords, _) in units.items()
                 if words & set(qwords)]
        if not asked:
            continue
        asked_units = {u for u, _ in asked}
        for column in select.find_all(exp.Column):
            parts = _parts(column.name)
            for unit, (_, cparts) in units.items():
                if unit in asked_units or not parts & set(cparts):
                    continue
                if _unconverted(select, column, question):
                    return (f"the question speaks of {asked[0][1]}; {column.name} holds "
                            f"{unit} and the SQL does not convert it")
    return None
