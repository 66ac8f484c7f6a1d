"""The numbers behind the rows: the value a ranking or a filter was decided on, shown beside
the answer.

"The five artists with the most tracks" answered with five names leaves the reader to trust
the counts unseen. Where the final SQL orders by an expression it does not select and keeps
the first rows (``ORDER BY COUNT(*) DESC LIMIT 5``), or filters groups by an aggregate
(``HAVING SUM(total) > 100``), a display query selects that expression too, beside the
answer's own columns. It is shown only when it returns as many rows as the answer; the
answer's SQL, and what an evaluation scores, are unchanged.
"""

from __future__ import annotations

from sqlglot import exp

from agents.answer.sqlshape import outer_select, sql_of

_MAX_ADDED = 3


def _key(node: exp.Expression) -> str:
    return sql_of(node).casefold().replace(" ", "")


def _label(node: exp.Expression) -> str:
    """The added column's heading: the expression without its table aliases (``COUNT(*)``,
    ``SUM(Total_spent)``, ``mpg``)."""
    bare = node.copy().transform(
        lambda n: exp.column(n.name) if isinstance(n, exp.Column) else n)
    return sql_of(bare)


def numbers_behind(sql: str, result: dict, db, *, timeout: float,
                   max_rows: int = 50) -> dict | None:
    """``{"sql", "added", "columns", "rows"}``: the answer's rows with the values it was
    ranked or filtered by, or None when there are none to add or the display query does not
    return the same rows."""
    if not result or not result.get("ok") or not result.get("row_count"):
        return None
    select = outer_select(sql)
    if select is None or select.args.get("distinct") or select.find(exp.Star) is not None \
            and any(isinstance(p, exp.Star) for p in select.expressions):
        return None
    shown = {_key(p.unalias()) for p in select.expressions} | \
        {p.alias.casefold() for p in select.expressions if p.alias}
    wanted: list[exp.Expression] = []
    order = select.args.get("order")
    if order is not None and select.args.get("limit") is not None:
        wanted += [o.this for o in order.expressions]
    having = select.args.get("having")
    if having is not None:
        wanted += list(having.find_all(exp.AggFunc))
    added = []
    for node in wanted:
        if isinstance(node, exp.Literal) or _key(node) in shown or \
                _key(node) in {_key(a) for a in added}:
            continue
        if isinstance(node, exp.Column) and node.name.casefold() in shown:
            continue
        added.append(node)
    added = added[:_MAX_ADDED]
    if not added:
        return None
    display = select.copy()
    names = [_label(node) for node in added]
    for node, name in zip(added, names):
        display = display.select(exp.alias_(node.copy(), name, quoted=True), copy=False)
    display_sql = sql_of(display)
    shown_rows = db.execute(display_sql, timeout=timeout, max_rows=max_rows)
    if not shown_rows.ok or shown_rows.row_count != result.get("row_count"):
        return None
    preview = shown_rows.preview(rows=max_rows)
    return {"sql": display_sql, "added": names, "columns": preview["columns"],
            "rows": preview["rows"], "truncated": preview["truncated"]}
