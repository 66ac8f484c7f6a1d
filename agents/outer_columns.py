"""A subquery that selects a column of the outer query: SQL that runs and means nothing.

``SELECT name FROM museum WHERE museum_id NOT IN (SELECT museum_id FROM visitor)``, where
``visitor`` has no ``museum_id``, is not an error: SQL resolves the name in the outer query, so
the subquery returns the outer row's own ``museum_id`` once per visitor and the condition
compares each museum with itself (here: no museum is ever "not in"). In the benchmark traces a
small model wrote such subqueries when it took a column from the table beside the one that has
it; nothing failed, so nothing repaired them, and the answer came back empty or whole.

:func:`outer_column_in_subquery` finds a column in a subquery's SELECT list that belongs to an
outer query. A correlated reference in a subquery's WHERE (``WHERE v.museum_id =
m.museum_id``) is the usual, meaningful kind and is left alone. Names are resolved with
sqlglot's qualifier and scopes against the tables the query reads; SQL that cannot be read, or
names that cannot be resolved, are never reported.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import traverse_scope

from .error_hints import query_tables

SHOWN_CHARS = 90  # longest subquery text quoted in the description


def outer_column_in_subquery(sql: str | None, schema) -> str | None:
    """A one-line description of the first subquery of ``sql`` whose SELECT list holds a column
    of an outer query, or None. ``schema`` is an :class:`agents.schema.Schema` (the tables the
    query reads are looked up in it)."""
    if not sql or not sql.strip():
        return None
    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError):
        return None
    if tree is None:
        return None
    mapping = _mapping(sql, schema)
    if not mapping:
        return None
    try:
        qualified = qualify(tree.copy(), schema=mapping, dialect="sqlite",
                            validate_qualify_columns=False, quote_identifiers=False,
                            identify=False)
        scopes = list(traverse_scope(qualified))
        written = list(traverse_scope(tree))  # the same scopes, as the query writes them
    except Exception:  # sqlglot refuses some valid queries; the database is the judge then
        return None
    for index, scope in enumerate(scopes):
        if scope.parent is None or not isinstance(scope.expression, exp.Select):
            continue
        listed = {id(column) for projection in scope.expression.expressions
                  for column in projection.find_all(exp.Column)}
        outer = [c for c in scope.external_columns if id(c) in listed]
        if outer:
            as_written = written[index].expression if len(written) == len(scopes) else None
            return _describe(scope, outer[0], as_written)
    return None


def _mapping(sql: str, schema) -> dict[str, dict[str, str]]:
    """The tables ``sql`` reads, as sqlglot's schema mapping (table -> column -> type)."""
    mapping = {}
    for table_name in set(query_tables(sql, schema).values()):
        table = schema.table(table_name)
        if table is not None:
            mapping[table.name] = {c.name: (c.type or "TEXT") for c in table.columns}
    return mapping


def _describe(scope, column: exp.Column, as_written: exp.Expression | None) -> str:
    tables = [source for source in scope.sources.values() if isinstance(source, exp.Table)]
    own = ", ".join(t.name for t in tables) or "none"
    text = " ".join((as_written or scope.expression).sql(dialect="sqlite").split())
    if len(text) > SHOWN_CHARS:
        text = text[:SHOWN_CHARS - 1] + "…"
    return (f"the subquery ({text}) selects {column.name} of the outer query's {column.table}, "
            f"not of its own tables ({own}), so it returns each outer row's own value")
