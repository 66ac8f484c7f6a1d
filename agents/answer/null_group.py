"""A NULL group that "wins": the top row of a ranking over groups whose key is NULL.

"Which department has the most employees" grouped by ``department_id`` puts the employees
without a department in one group, and when there are many of them that group comes first:
the answer is "NULL". Where the query groups, keeps the first rows of an ordering, and a
projected group key of the first row is NULL, the answer is doubtful: the question asks about
named things. Read from the result alone; no query is run.
"""

from __future__ import annotations

from sqlglot import exp

from agents.answer.sqlshape import outer_select, sql_of


def null_group_doubt(sql: str, result: dict) -> str | None:
    """Why the ranking's top row is the group without a key, or None."""
    select = outer_select(sql)
    if select is None or select.args.get("group") is None or not result or \
            not result.get("ok") or not result.get("rows"):
        return None
    order = select.args.get("order")
    if order is None or select.args.get("limit") is None or \
            not any(o.find(exp.AggFunc) for o in order.expressions):
        return None  # not a ranking of groups by what they hold
    keys = {sql_of(e).casefold() for e in select.args["group"].expressions}
    first = result["rows"][0]
    for position, projection in enumerate(select.expressions):
        inner = projection.unalias()
        named = {sql_of(inner).casefold(), (projection.alias or "").casefold()}
        if keys & named and position < len(first) and first[position] is None:
            column = result.get("columns", [])[position] if position < len(
                result.get("columns", [])) else sql_of(inner)
            return (f"the top row is the group of rows without a {column} (NULL), not a "
                    "named one")
    return None
