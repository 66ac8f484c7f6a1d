"""A unit in the question the SQL does not convert to: minutes asked, milliseconds compared.

Schemas say units in column names (``duration_ms``, ``price_cents``, ``length_seconds``); a
question says them in words ("longer than 5 minutes", "in dollars"); both are read from
:mod:`agents.db.units`. Where the question names a unit, the SQL reads a column whose name
carries another unit of the same quantity, and the SQL does no arithmetic on that column (no
``/`` or ``*``), the result is likely in the wrong unit. Names only: no value is read.
"""

from __future__ import annotations

import re

from sqlglot import exp

from agents.answer.sqlshape import outer_select
from agents.db.units import QUANTITIES, column_unit, units_of

_WORD = re.compile(r"[a-z]+")


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
    for quantity in QUANTITIES:
        asked = [(u, sorted(words & set(u.words))[0]) for u in units_of(quantity)
                 if words & set(u.words)]
        if not asked:
            continue
        asked_units = {u.name for u, _ in asked}
        for column in select.find_all(exp.Column):
            unit = column_unit(column.name)
            if unit is None or unit.quantity != quantity or unit.name in asked_units:
                continue
            if _unconverted(select, column, question):
                return (f"the question speaks of {asked[0][1]}; {column.name} holds "
                        f"{unit.name} and the SQL does not convert it")
    return None
