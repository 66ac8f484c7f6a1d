"""A query whose answer comes from an arbitrary row: an aggregate beside an ungrouped column.

``SELECT name, COUNT(*) FROM concert`` without ``GROUP BY`` is an error in most databases; SQLite
runs it and returns one row, the count over the whole table beside a ``name`` taken from some
row it does not specify (https://sqlite.org/lang_select.html, "bare columns in an aggregate
query"). The one defined case is a single ``min()`` or ``max()``: the bare columns then come
from the row that holds the minimum or maximum, an idiom answers rely on
(``SELECT name, max(age) FROM singer``).

In the benchmark traces a small model's revision sometimes dropped the ``GROUP BY`` of a query
that counted per group ("the number of singers for every concert"), asked by a reviewer to
"simplify" it; the revised SQL still ran, so nothing else stopped it, and the answer became one
arbitrary group. :func:`arbitrary_row_aggregate` finds that shape so a gate can refuse a
revision that introduces it. The check reads the SQL with sqlglot; SQL it cannot read is never
reported (the database is the judge of what runs).
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

# Aggregates that make SQLite take the bare columns from the row holding the extreme value.
_EXTREMES = (exp.Min, exp.Max)


def arbitrary_row_aggregate(sql: str | None) -> str | None:
    """A short description of the first SELECT of ``sql`` that mixes an aggregate with a column
    outside any aggregate and has no GROUP BY (``"COUNT(T2.singer_id) beside T1.concert_name
    without GROUP BY"``), or None: no such SELECT, a single min()/max() (defined by SQLite), or
    SQL that does not parse."""
    if not sql or not sql.strip():
        return None
    try:
        trees = sqlglot.parse(sql, read="sqlite")
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError):
        return None
    for tree in trees:
        if tree is None:
            continue
        for select in tree.find_all(exp.Select):
            found = _mixed(select)
            if found:
                return found
    return None


def _mixed(select: exp.Select) -> str | None:
    if select.args.get("group"):
        return None
    aggregates, bare = [], []
    for projection in select.expressions:
        aggregates.extend(_own(projection, exp.AggFunc))
        bare.extend(column for column in _own(projection, exp.Column)
                    if not _inside(column, (exp.AggFunc, exp.Filter), projection))
    if not aggregates or not bare:
        return None
    if len(aggregates) == 1 and isinstance(aggregates[0], _EXTREMES):
        return None
    return (f"{aggregates[0].sql(dialect='sqlite')} beside {bare[0].sql(dialect='sqlite')} "
            "without GROUP BY")


def _own(node: exp.Expression, kind: type) -> list[exp.Expression]:
    """Nodes of ``kind`` under ``node`` that belong to this SELECT: not inside a subquery and
    not inside a window function (``COUNT(*) OVER ()`` is computed per row)."""
    return [found for found in node.find_all(kind)
            if not _inside(found, exp.Select, node) and not _inside(found, exp.Window, node)]


def _inside(node: exp.Expression, kind: type, top: exp.Expression) -> bool:
    """Whether an ancestor of ``node`` up to ``top`` (``top`` included, ``node`` not) is of
    ``kind``."""
    current = node
    while current is not top and current.parent is not None:
        current = current.parent
        if isinstance(current, kind):
            return True
    return False
