"""What the checks need to read of the final SQL: its outermost SELECT, the tables its aliases
stand for (those come from :func:`agents.db.sqltext.select_tables`), the columns it groups
by. sqlglot parses; SQL it cannot parse is left alone."""

from __future__ import annotations

from sqlglot import exp

from agents.db.sqltext import parse_statement


def outer_select(sql: str) -> exp.Select | None:
    """The SQL's outermost SELECT, or None (a compound query, or SQL sqlglot cannot read)."""
    tree = parse_statement(sql)
    return tree if isinstance(tree, exp.Select) else None


def column_table(column: exp.Column, aliases: dict[str, str], schema) -> str | None:
    """The table ``column`` is read from: its qualifier's table, or the one table of the query
    that has a column of that name."""
    if column.table:
        return aliases.get(column.table.casefold())
    holders = [t for t in set(aliases.values())
               if schema.table(t) is not None and schema.table(t).column(column.name)]
    return holders[0] if len(holders) == 1 else None


def group_columns(select: exp.Select) -> list[exp.Column]:
    group = select.args.get("group")
    if group is None:
        return []
    return [c for e in group.expressions for c in e.find_all(exp.Column)]


def where_conditions(select: exp.Select) -> list[exp.Expression]:
    """The WHERE clause's conditions joined by AND (one, where there is no AND)."""
    where = select.args.get("where")
    if where is None:
        return []
    cond = where.this
    return list(cond.flatten()) if isinstance(cond, exp.And) else [cond]


def sql_of(node: exp.Expression) -> str:
    return node.sql(dialect="sqlite")
