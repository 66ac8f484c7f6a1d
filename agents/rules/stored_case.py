"""Values compared in a case the database does not store them in: ``name = 'paris'`` where the
column holds 'Paris'. SQLite's ``=`` is case-sensitive, so such a query runs and returns
nothing; the stored spelling is looked up (within a time budget) and the literal rewritten."""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlglot import exp

from agents.db.identifiers import quote_identifier
from agents.db.sqltext import parse_statement, select_tables

# Seconds all the stored-value lookups of one check may take together, each query within the
# run's own limit too: a lookup scans a column, and a wide query on a large table compares
# many strings. Spent, the strings not looked up yet are kept as written.
LOOKUP_BUDGET = 2.0


@dataclass(frozen=True)
class StoredCase:
    sql: str                       # the statement with the stored values written in
    values: list[tuple[str, str]]  # (as written, as stored), in the order met


def stored_case(sql: str | None, db, schema, *, timeout: float,
                budget: float = LOOKUP_BUDGET) -> StoredCase | None:
    """``sql`` with each string it compares with a column by ``=`` or ``IN`` written as the
    column stores it, where the column holds no such string but exactly one equal to it but
    for case; None when nothing changes (or the SQL cannot be read). The lookups stop when
    ``budget`` seconds are spent."""
    deadline = time.monotonic() + budget
    tree = parse_statement(sql)
    if tree is None:
        return None
    changed: list[tuple[str, str]] = []
    for node in list(tree.find_all(exp.EQ, exp.In)):
        column, literals = _compared(node)
        table = _table_of(column, node, schema) if column is not None else None
        if table is None:
            continue
        for literal in literals:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            stored = _stored_spelling(db, table, column.name, literal.this, min(timeout, left))
            if stored is not None:
                changed.append((literal.this, stored))
                literal.replace(exp.Literal.string(stored))
    if not changed:
        return None
    return StoredCase(sql=tree.sql(dialect="sqlite"), values=changed)


def _compared(node: exp.Expression) -> tuple[exp.Column | None, list[exp.Literal]]:
    """The column and the string literals a ``col = 'x'`` / ``'x' = col`` / ``col IN ('x',
    ...)`` compares it with."""
    if isinstance(node, exp.In):
        column, others = node.this, list(node.expressions)
    elif isinstance(node.this, exp.Column):
        column, others = node.this, [node.expression]
    else:
        column, others = node.expression, [node.this]
    if not isinstance(column, exp.Column):
        return None, []
    return column, [o for o in others if isinstance(o, exp.Literal) and o.is_string]


def _table_of(column: exp.Column, node: exp.Expression, schema) -> str | None:
    """The table ``column`` belongs to: its qualifier's table in the nearest SELECT that
    names it (a correlated subquery's column may name an outer one), or the one table of its
    own SELECT that has a column of that name."""
    select = node.find_ancestor(exp.Select)
    while select is not None:
        tables = select_tables(select)
        if column.table:
            found = tables.get(column.table.casefold())
            if found is not None:
                return found
        else:
            owners = {name for name in tables.values() if schema.table(name) is not None
                      and column.name.casefold() in
                      {c.casefold() for c in schema.table(name).column_names()}}
            return owners.pop() if len(owners) == 1 else None
        select = select.find_ancestor(exp.Select)
    return None


def _stored_spelling(db, table: str, column: str, value: str, timeout: float) -> str | None:
    quoted_table, quoted_column = quote_identifier(table), quote_identifier(column)
    literal = exp.Literal.string(value).sql(dialect="sqlite")
    exact = db.execute(f"SELECT 1 FROM {quoted_table} WHERE {quoted_column} = {literal} "
                       "LIMIT 1", timeout=timeout, max_rows=1)
    if not exact.ok or exact.rows:
        return None
    other = db.execute(f"SELECT DISTINCT {quoted_column} FROM {quoted_table} WHERE "
                       f"lower({quoted_column}) = lower({literal}) LIMIT 2",
                       timeout=timeout, max_rows=2)
    if not other.ok or len(other.rows) != 1 or not isinstance(other.rows[0][0], str):
        return None
    return other.rows[0][0]
